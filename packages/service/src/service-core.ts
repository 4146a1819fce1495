// What every service's `createService` builds first: the HTTP app with the event admin routes
// and the outbox worker, from the dependencies every service takes.
import { walCompressionOf, type Sql } from '@craig/db';
import { OutboxWorker, type DedupHorizonOptions, type RetentionWindows, type Transport } from '@craig/mq';
import type { BaseSettings } from '@craig/settings';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createHttpApp, type ReadinessCheck } from './app.ts';
import { outboxAdminHandlers } from './event-admin-handlers.ts';
import { registerEventAdminRoutes, type EventAdminHandlers } from './event-admin-routes.ts';
import { silentLogger } from './logger.ts';

/** The dependencies every service's `createService(deps)` takes (its own deps extend these). */
export interface ServiceCoreDeps {
  /** A pool on the service's database. */
  readonly sql: Sql;
  /** The same database's URL: each transport-sweep cycle (and any local sweep) opens a dedicated session on it. */
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  /** Where the outbox publishes and consumers subscribe (`createTransport(settings.transport, …)`). */
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS). */
  readonly retention: RetentionWindows;
  /** OUTBOX_MAX_ATTEMPTS. */
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly (3600). */
  readonly pruneEveryTicks?: number;
  /** SWEEP_WAL_COMPRESSION: how the transport prune compresses its own full-page images; default lz4 ('off': the server's setting). */
  readonly sweepWalCompression?: BaseSettings['outbox']['sweepWalCompression'];
  /** DRAIN_WAL_COMPRESSION: how each drain transaction compresses its own full-page images; default lz4 ('off': the server's setting). */
  readonly drainWalCompression?: BaseSettings['outbox']['drainWalCompression'];
  readonly logger?: Logger;
  /** Outbox loop tuning (tests); defaults suit production. */
  readonly outbox?: { readonly pollIntervalMs?: number };
}

/** The dependencies of a service whose own code subscribes inbox consumers (`startConsumers()`). */
export interface ConsumerDeps {
  /** INBOX_MAX_RETRIES: retries of a failed handler before the event is dead-lettered. */
  readonly inboxMaxRetries: number;
  /** INBOX_MAX_DELIVERIES: deliveries without an acknowledgement (the consumer died or timed out) before the event is dead-lettered. */
  readonly inboxMaxDeliveries: number;
  /** Consumer tuning (tests); defaults suit production. */
  readonly consumers?: { readonly prefetch?: number; readonly retryDelayMs?: (attempt: number) => number };
}

export interface ServiceCoreOptions {
  /** Body limit of the routes that declare none (default 16 KiB); a route that takes more declares its own `bodyLimit`. */
  readonly bodyLimitBytes?: number;
  /** What `/readyz` runs; default one `database` check (`select 1` on the pool). */
  readonly readiness?: readonly ReadinessCheck[];
  /** Replay and redrive; default {@link outboxAdminHandlers} on the service's own outbox. */
  readonly eventAdmin?: EventAdminHandlers;
}

export interface ServiceCore {
  /** The app with health, readiness, metrics, admin auth and the event admin routes; add the service's routes. */
  readonly app: FastifyInstance;
  /** Publishes the service's outbox and runs its transport sweep; the boot helper runs it. */
  readonly outbox: OutboxWorker;
  /** `deps.logger`, or a silent one. */
  readonly logger: Logger;
}

/**
 * The part of `createService` every service shares: `createHttpApp` (readiness on the pool
 * unless told otherwise), `POST /v1/admin/events/replay` and `/redrive`, and the outbox
 * worker with the service's windows and attempts.
 */
export function serviceCore(service: string, deps: ServiceCoreDeps, options: ServiceCoreOptions = {}): ServiceCore {
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service,
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    ...(options.bodyLimitBytes === undefined ? {} : { bodyLimitBytes: options.bodyLimitBytes }),
    readiness: options.readiness ?? [{ name: 'database', check: async () => void (await deps.sql`select 1`) }],
  });
  registerEventAdminRoutes(app, options.eventAdmin ?? outboxAdminHandlers(deps.sql, deps.retention));
  const outbox = new OutboxWorker({
    service,
    sql: deps.sql,
    databaseUrl: deps.databaseUrl,
    transport: deps.transport,
    retention: deps.retention,
    maxAttempts: deps.outboxMaxAttempts,
    registry: deps.registry,
    logger,
    ...(deps.outbox?.pollIntervalMs === undefined ? {} : { pollIntervalMs: deps.outbox.pollIntervalMs }),
    ...(deps.pruneEveryTicks === undefined ? {} : { pruneEveryTicks: deps.pruneEveryTicks }),
    ...(deps.sweepWalCompression === undefined ? {} : { pruneWalCompression: walCompressionOf(deps.sweepWalCompression) }),
    ...(deps.drainWalCompression === undefined ? {} : { drainWalCompression: walCompressionOf(deps.drainWalCompression) }),
  });
  return { app, outbox, logger };
}

/** The {@link ConsumerDeps} settings of a service that opens its consumers itself: `createService({ ...coreDeps, ...inboxDeps(settings) })`. */
export function inboxDeps(settings: { readonly inbox: { readonly maxRetries: number; readonly maxDeliveries: number } }): Pick<ConsumerDeps, 'inboxMaxRetries' | 'inboxMaxDeliveries'> {
  return { inboxMaxRetries: settings.inbox.maxRetries, inboxMaxDeliveries: settings.inbox.maxDeliveries };
}

/** What {@link consumerOptions} returns, and what every service's `start…Consumer` takes. */
export interface ConsumerOptions {
  readonly transport: Transport;
  /** The service's own pool (its inbox and the handler's writes). */
  readonly sql: Sql;
  /** INBOX_MAX_RETRIES: retries of a failed handler before the event is dead-lettered. */
  readonly maxRetries: number;
  /** INBOX_MAX_DELIVERIES: deliveries without an acknowledgement before the event is dead-lettered. */
  readonly maxDeliveries: number;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** The service and its inbox window: every delivery's producer windows are checked against it (pass it to `startConsumer`). */
  readonly horizon: DedupHorizonOptions;
  readonly prefetch?: number;
  readonly retryDelayMs?: (attempt: number) => number;
}

/**
 * The options every `start…Consumer` of a service takes, from its deps: the transport, the
 * pool, INBOX_MAX_RETRIES and INBOX_MAX_DELIVERIES, the registry and logger, the dedup-horizon
 * check (the service and its inbox window), and the test tuning when given.
 */
export function consumerOptions(service: string, deps: ServiceCoreDeps & ConsumerDeps, logger: Logger): ConsumerOptions {
  return {
    transport: deps.transport,
    sql: deps.sql,
    maxRetries: deps.inboxMaxRetries,
    maxDeliveries: deps.inboxMaxDeliveries,
    registry: deps.registry,
    logger,
    horizon: { service, inboxDays: deps.retention.inboxDays },
    ...(deps.consumers?.prefetch === undefined ? {} : { prefetch: deps.consumers.prefetch }),
    ...(deps.consumers?.retryDelayMs ? { retryDelayMs: deps.consumers.retryDelayMs } : {}),
  };
}
