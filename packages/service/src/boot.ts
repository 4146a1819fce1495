// The composition root every service's main.ts repeats: settings → logger → schema → pool →
// transport → the service's parts → start in order → listen; stopped in reverse order.
import { createClient, migrate, type MigrationSet, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createTransport, startConsumer, type EventHandler, type OutboxWorker, type SubscribeOptions, type Transport } from '@craig/mq';
import { loadServiceSettings, secretValues, type BaseSettings, type Env, type ServiceName, type SettingsFor } from '@craig/settings';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { Lifecycle } from './lifecycle.ts';
import { createLogger } from './logger.ts';
import { checkRuntimeIdentity, prepareServiceDatabase } from './runtime-database.ts';
import type { ServiceCoreDeps } from './service-core.ts';

/** What `build` gets: everything the boot helper opened for the service. */
export interface BootContext<S extends BaseSettings = BaseSettings> {
  readonly settings: S;
  readonly logger: Logger;
  /** The service's pool, running as its runtime role (RUNTIME_ROLE). */
  readonly sql: Sql;
  readonly transport: Transport;
  readonly registry: Registry;
  /**
   * What every `createService(deps)` takes, from the above and the settings (database URL,
   * admin token, transport-sweep windows, OUTBOX_MAX_ATTEMPTS, EVENT_PRUNE_EVERY_TICKS; a
   * service that opens its consumers itself adds INBOX_MAX_RETRIES and INBOX_MAX_DELIVERIES,
   * `inboxDeps(settings)`):
   * `createService({ ...ctx.coreDeps, …the service's own })`.
   */
  readonly coreDeps: ServiceCoreDeps;
  /**
   * Register something `build` opened (an object store client, a second pool) to stop after the
   * outbox worker and before the transport: it outlives everything that could still use it.
   */
  onStop(name: string, stop: () => Promise<void>): void;
}

/** An inbox consumer the boot helper subscribes with `startConsumer` (the service's pool, registry, logger). */
export interface ConsumerSpec extends Omit<SubscribeOptions, 'maxRetries' | 'maxDeliveries'> {
  readonly handler: EventHandler;
  /** Retries before the dead letter; default the service's INBOX_MAX_RETRIES. */
  readonly maxRetries?: number;
  /** Deliveries without an acknowledgement before the dead letter; default the service's INBOX_MAX_DELIVERIES. */
  readonly maxDeliveries?: number;
}

/**
 * Something that runs beside the HTTP server: started after the outbox worker, stopped before
 * it (so whatever it stages is still drained by a running worker until it has stopped).
 */
export interface BackgroundTask {
  readonly name: string;
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

/** What a service's `build` returns. */
export interface ServiceParts {
  readonly app: FastifyInstance;
  readonly outbox?: OutboxWorker;
  readonly consumers?: readonly ConsumerSpec[];
  readonly background?: readonly BackgroundTask[];
}

export interface BootOptions<S extends BaseSettings = BaseSettings> {
  /** The service's migration sets in order, or a function of its settings. */
  readonly migrations: readonly MigrationSet[] | ((settings: S) => readonly MigrationSet[]);
  /** Pool size (default 6). Every runtime connection runs as RUNTIME_ROLE (docs/adr/063-runtime-roles.md). */
  readonly pool?: { readonly max?: number };
  build(context: BootContext<S>): ServiceParts | Promise<ServiceParts>;
}

export interface BootedService<S extends BaseSettings = BaseSettings> extends BootContext<S> {
  readonly parts: ServiceParts;
  /** Where the HTTP server listens (the real port when HTTP_PORT is 0). */
  readonly address: { readonly host: string; readonly port: number };
}

/** A loop that runs until its signal aborts (`OutboxWorker.run`), as a {@link BackgroundTask}. */
export function loopTask(name: string, run: (signal: AbortSignal) => Promise<void>): BackgroundTask {
  let controller: AbortController | undefined;
  let stopped: Promise<void> = Promise.resolve();
  return {
    name,
    start() {
      controller = new AbortController();
      stopped = run(controller.signal);
    },
    async stop() {
      controller?.abort();
      await stopped;
    },
  };
}

/**
 * Subscriptions a service opens itself (`service.startConsumers()`: a dead-letter consumer, or
 * consumers with their own counters) as a {@link BackgroundTask}: opened in order with the
 * other background tasks, closed before the outbox worker stops. A failed open leaves nothing
 * to close (the opener closes what it had opened).
 */
export function subscriptionTask(name: string, open: () => Promise<{ close(): Promise<void> }>): BackgroundTask {
  let opened: { close(): Promise<void> } | undefined;
  return {
    name,
    async start() {
      opened = await open();
    },
    async stop() {
      await opened?.close();
    },
  };
}

/**
 * Boot a service on settings already loaded: migrate its sets (and the bus set on the bus
 * database when the transport is PostgreSQL), open the pool and the transport, `build` the
 * service, start the outbox worker, then the consumers and background tasks in order, then
 * listen. Each thing is registered on `life` as it starts, so `life.stop()` stops them in
 * reverse: http → background and consumers → outbox worker → transport → database pool.
 * On a failure nothing more is started and the error is rethrown; the caller stops `life`.
 */
export async function bootService<S extends BaseSettings>(settings: S, logger: Logger, life: Lifecycle, options: BootOptions<S>): Promise<BootedService<S>> {
  const service = settings.service;
  const sets = typeof options.migrations === 'function' ? options.migrations(settings) : options.migrations;
  // As the migration login: the schema (an installer guard in a set refuses before any file of
  // any set is applied), then the runtime role and exactly its grants.
  const { poolRole } = await prepareServiceDatabase(settings, sets, { service, logger });
  if (settings.transport.kind === 'postgres') await migrate(settings.transport.busDatabaseUrl, [BUS_MIGRATIONS], { service, logger });

  const sql = createClient(settings.databaseUrl, { service, max: options.pool?.max ?? 6, ...(poolRole === undefined ? {} : { role: poolRole }) });
  life.add('database pool', () => sql.end({ timeout: 5 }));
  await checkRuntimeIdentity(sql, settings, logger);
  const transport = await createTransport(settings.transport, { service, logger });
  life.add('transport', () => transport.close());

  const registry = new Registry();
  const coreDeps: ServiceCoreDeps = {
    sql,
    databaseUrl: settings.databaseUrl,
    registry,
    adminToken: settings.adminToken,
    transport,
    retention: settings.retention,
    outboxMaxAttempts: settings.outbox.maxAttempts,
    pruneEveryTicks: settings.outbox.pruneEveryTicks,
    sweepWalCompression: settings.outbox.sweepWalCompression,
    drainWalCompression: settings.outbox.drainWalCompression,
    logger,
  };
  const context: BootContext<S> = { settings, logger, sql, transport, registry, coreDeps, onStop: (name, stop) => life.add(name, stop) };
  const parts = await options.build(context);

  if (parts.outbox) {
    const outbox = loopTask('outbox worker', (signal) => parts.outbox!.run(signal));
    await outbox.start();
    life.add(outbox.name, () => outbox.stop());
  }
  for (const spec of parts.consumers ?? []) {
    const { handler, maxRetries, maxDeliveries, ...subscribe } = spec;
    const horizon = { service, inboxDays: settings.retention.inboxDays };
    const subscription = await startConsumer({
      ...subscribe,
      maxRetries: maxRetries ?? settings.inbox.maxRetries,
      maxDeliveries: maxDeliveries ?? settings.inbox.maxDeliveries,
      transport,
      sql,
      handler,
      registry,
      logger,
      horizon,
    });
    life.add(`consumer ${spec.consumer}`, () => subscription.close());
  }
  for (const task of parts.background ?? []) {
    await task.start();
    life.add(task.name, () => task.stop());
  }

  await parts.app.listen({ host: settings.http.host, port: settings.http.port });
  life.add('http', () => parts.app.close());
  const bound = parts.app.server.address();
  const address = { host: settings.http.host, port: typeof bound === 'object' && bound !== null ? bound.port : settings.http.port };
  logger.info(address, `${service} service started`);
  return { ...context, parts, address };
}

/**
 * `main.ts` in one call: load the service's settings from `env` (main passes `process.env`;
 * this package never reads it), create the logger, stop on SIGTERM/SIGINT, and boot. Refused
 * settings are logged (fatal) and written to stderr as they read; a fatal start error is logged
 * and everything already started is stopped; either way the exit code is 1.
 */
export async function runService<N extends ServiceName>(service: N, env: Env, options: BootOptions<SettingsFor<N>>): Promise<BootedService<SettingsFor<N>> | undefined> {
  let settings: SettingsFor<N>;
  try {
    settings = loadServiceSettings(service, env);
  } catch (error) {
    // The loader already redacted every secret it names (secret settings, URL passwords, misspelt secret keys).
    createLogger(service, 'info').fatal({ err: error }, `${service} service refused its settings`);
    // And as written, for the operator at a terminal: every problem on its own line, naming the
    // variable and its value unescaped (the JSON line above is for the log pipeline).
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
    return undefined;
  }
  // Every line of the service is scrubbed of the admin token, the S3 secret and database passwords.
  const logger = createLogger(service, settings.logLevel, { secrets: secretValues(settings) });
  const life = new Lifecycle(logger);
  life.stopOnSignals();
  try {
    return await bootService(settings, logger, life, options);
  } catch (error) {
    logger.fatal({ err: error }, `${service} service failed to start`);
    process.exitCode = 1;
    await life.stop();
    return undefined;
  }
}
