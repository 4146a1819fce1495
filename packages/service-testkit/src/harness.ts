import { createClient, migrationTemplate, type MigrationSet, type Sql } from '@craig/db';
import type { EventHandler, Transport } from '@craig/mq';
import { createObjectStore, type ObjectStore } from '@craig/store';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { caseEventDelivery } from './fixtures.ts';
import { testTransport, type TestTransport, type TransportKind } from './transport.ts';

export const ADMIN_TOKEN = 'an-admin-token-for-tests-0123456789';

/** The dependencies every service's `createService` takes, with test values. */
export interface CommonDeps {
  readonly sql: Sql;
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  readonly transport: Transport;
  readonly retention: { readonly outboxDays: number; readonly inboxDays: number };
  readonly outboxMaxAttempts: number;
}

/** What a harness hands its `build`: the common deps, and the object store when it archives. */
export interface BuildContext<Store extends ObjectStore | undefined = undefined> {
  readonly deps: CommonDeps;
  readonly db: TestDatabase;
  readonly store: Store;
}

export interface HarnessOptions<S extends { readonly app: FastifyInstance }, Store extends ObjectStore | undefined = undefined> {
  /** The service's name: `<name>-test` names its pool and transport client, `<name>_t` its database, and the bus or exchange. */
  readonly name: string;
  /** Database name prefix (default `<name>_t`). */
  readonly prefix?: string;
  /** Migration sets copied from a template migrated once per content (the usual way). */
  readonly migrations?: readonly MigrationSet[];
  /** Or: migrate the fresh database itself (inventory: its allow-listed install refuses a template). */
  readonly migrate?: (db: TestDatabase) => Promise<void>;
  /** The role the service's pool runs as. */
  readonly role?: string;
  /** The PostgreSQL bus (default) or RabbitMQ. */
  readonly transport?: TransportKind;
  /** RabbitMQ: the consumer names whose queues are deleted at the end. */
  readonly queues?: readonly string[];
  /** Build the service (pass the service's own `createService`); not yet ready. */
  readonly build: (context: BuildContext<Store>) => S;
  /** Stop what `app.close` does not (a background runner), before the app closes. */
  readonly beforeClose?: (service: S) => Promise<void>;
}

/** A service on its own migrated database and transport (not listening; use `app.inject`). */
export interface ServiceHarness<S> {
  readonly db: TestDatabase;
  readonly bus: TestTransport;
  readonly transport: Transport;
  /** The service's pool. */
  readonly sql: Sql;
  readonly service: S;
  readonly app: FastifyInstance;
  readonly registry: Registry;
  drop(): Promise<void>;
}

/** An archiving service's harness: also an S3 server and an object store on it. */
export interface ArchiveHarness<S> extends ServiceHarness<S> {
  readonly s3: S3TestServer;
  readonly store: ObjectStore;
}

async function start<S extends { readonly app: FastifyInstance }, Store extends ObjectStore | undefined>(
  options: HarnessOptions<S, Store>,
  store: Store,
): Promise<ServiceHarness<S>> {
  const [db, bus] = await Promise.all([
    testDatabase({ prefix: options.prefix ?? `${options.name}_t`, max: 2, ...(options.migrations ? { template: migrationTemplate(options.migrations) } : {}) }),
    testTransport(options.transport ?? 'postgres', { name: options.name, queues: options.queues ?? [] }),
  ]);
  await options.migrate?.(db);
  const transport = await bus.open(`${options.name}-test`);
  const sql = createClient(db.url, { service: `${options.name}-test`, max: 3, idleTimeoutSeconds: 5, ...(options.role ? { role: options.role } : {}) });
  const registry = new Registry();
  const deps: CommonDeps = { sql, databaseUrl: db.url, registry, adminToken: ADMIN_TOKEN, transport, retention: { outboxDays: 30, inboxDays: 31 }, outboxMaxAttempts: 10 };
  const service = options.build({ deps, db, store });
  await service.app.ready();
  return {
    db,
    bus,
    transport,
    sql,
    service,
    app: service.app,
    registry,
    async drop() {
      await options.beforeClose?.(service);
      await service.app.close();
      await transport.close({ graceMs: 0 });
      await sql.end({ timeout: 1 });
      await Promise.all([db.drop(), bus.drop()]);
    },
  };
}

/** A migrated database, a transport (the PostgreSQL bus unless asked otherwise) and the service on them. */
export function serviceHarness<S extends { readonly app: FastifyInstance }>(options: HarnessOptions<S>): Promise<ServiceHarness<S>> {
  return start(options, undefined);
}

/** As `serviceHarness`, plus an S3 server (answering 412 to a conditional overwrite) with `bucket`, and a store on it. */
export async function archiveHarness<S extends { readonly app: FastifyInstance }>(options: HarnessOptions<S, ObjectStore> & { readonly bucket: string }): Promise<ArchiveHarness<S>> {
  const server = await s3({ conditional: true, bucket: options.bucket });
  const store = createObjectStore(
    { backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true },
    { backoff: () => 0 },
  );
  let harness: ServiceHarness<S>;
  try {
    harness = await start(options, store);
  } catch (error) {
    store.close();
    await server.stop();
    throw error;
  }
  return {
    ...harness,
    s3: server,
    store,
    async drop() {
      await harness.drop();
      store.close();
      await server.stop();
    },
  };
}

/** A harness for a service consuming `case.*` events: `deliver` hands one to its first consumer through the inbox. */
export interface CaseConsumerHarness<S> extends ServiceHarness<S> {
  deliver(eventType: string, caseId: string, eventId?: string): Promise<void>;
}

export async function caseConsumerHarness<S extends { readonly app: FastifyInstance; readonly consumers: readonly { readonly consumer: string; readonly handler: EventHandler }[] }>(
  options: HarnessOptions<S>,
): Promise<CaseConsumerHarness<S>> {
  const h = await serviceHarness(options);
  const [consumer] = h.service.consumers;
  if (!consumer) throw new TypeError(`${options.name} has no consumer to deliver case events to`);
  return { ...h, deliver: caseEventDelivery(h.sql, consumer) };
}
