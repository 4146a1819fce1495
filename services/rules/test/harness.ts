import { randomBytes } from 'node:crypto';
import { createClient, migrationTemplate, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, createRabbitMqTransport, MQ_MIGRATIONS, OutboxWorker, type Transport } from '@craig/mq';
import { createObjectStore, type ObjectStore } from '@craig/store';
import { rabbitmq, s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { rulesMigrationSets } from '../src/migrations.ts';
import { createService, type RulesService } from '../src/service.ts';

export const ADMIN_TOKEN = 'an-admin-token-for-tests';
export const HOT_WINDOW_DAYS = 90;
export type TransportKind = 'postgres' | 'rabbitmq';

/** A transport of either kind on scratch resources (its own bus database, or its own exchange). */
export interface TestTransport {
  readonly kind: TransportKind;
  /** Open another client of the same transport (a producer, another consumer service). */
  open(service: string): Promise<Transport>;
  drop(): Promise<void>;
}

export async function testTransport(kind: TransportKind): Promise<TestTransport> {
  if (kind === 'postgres') {
    const bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'rules_bus', max: 1 });
    return { kind, open: (service) => createPostgresBusTransport({ url: bus.url, service, pollIntervalMs: 100 }), drop: () => bus.drop() };
  }
  const url = await rabbitmq();
  const exchange = `craig.test.rules.${randomBytes(4).toString('hex')}`;
  return {
    kind,
    open: (service) => createRabbitMqTransport({ url, exchange, service }),
    async drop() {
      const conn = await connect(url);
      try {
        const ch = await conn.createChannel();
        for (const c of ['rules.evaluate', 'listener.evaluated', 'dead-letter']) await ch.deleteQueue(`${exchange}.${c}`);
        await ch.deleteExchange(exchange);
        await ch.deleteExchange(`${exchange}.dlx`);
      } finally {
        await conn.close();
      }
    },
  };
}

export interface ServiceHarness {
  readonly db: TestDatabase;
  readonly s3: S3TestServer;
  readonly store: ObjectStore;
  readonly bus: TestTransport;
  readonly transport: Transport;
  readonly sql: Sql;
  readonly service: RulesService;
  readonly app: FastifyInstance;
  readonly registry: Registry;
  drop(): Promise<void>;
}

/** A migrated rules database, an S3 server, a transport, and the service on them. */
export async function serviceHarness(options: { readonly transport?: TransportKind; readonly prefix?: string } = {}): Promise<ServiceHarness> {
  const [db, server, bus] = await Promise.all([
    testDatabase({ template: migrationTemplate(rulesMigrationSets()), prefix: options.prefix ?? 'rules_t', max: 2 }),
    s3({ conditional: true, bucket: 'rules-archive' }),
    testTransport(options.transport ?? 'postgres'),
  ]);
  const store = createObjectStore(
    { backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true },
    { backoff: () => 0 },
  );
  const transport = await bus.open('rules-test');
  const sql = createClient(db.url, { service: 'rules-test', max: 3, idleTimeoutSeconds: 5 });
  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: db.url,
    registry,
    adminToken: ADMIN_TOKEN,
    transport,
    retention: { outboxDays: 30, inboxDays: 31 },
    outboxMaxAttempts: 10,
    inboxMaxRetries: 2,
    archive: { store, hotWindowDays: HOT_WINDOW_DAYS, prefix: 'archive', everyMinutes: 60 },
    consumers: { retryDelayMs: () => 10 },
  });
  await service.app.ready();
  return {
    db,
    s3: server,
    store,
    bus,
    transport,
    sql,
    service,
    app: service.app,
    registry,
    async drop() {
      await service.app.close();
      await transport.close({ graceMs: 0 });
      await sql.end({ timeout: 1 });
      store.close();
      await Promise.all([db.drop(), server.stop()]);
      await bus.drop();
    },
  };
}

/** A producer service: its own database with the outbox, and an outbox worker on the transport. */
export interface Producer {
  readonly db: TestDatabase;
  readonly outbox: OutboxWorker;
  readonly transport: Transport;
  drop(): Promise<void>;
}

export async function producer(bus: TestTransport, service = 'cases'): Promise<Producer> {
  const db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: `rules_${service}`, max: 2 });
  const transport = await bus.open(service);
  const outbox = new OutboxWorker({ service, sql: db.sql, databaseUrl: db.url, transport, retention: { outboxDays: 30, inboxDays: 31 }, maxAttempts: 5, registry: new Registry() });
  return {
    db,
    outbox,
    transport,
    async drop() {
      await transport.close({ graceMs: 0 });
      await db.drop();
    },
  };
}

/** A JSON response body; tests assert on it field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export async function call(app: FastifyInstance, method: 'GET' | 'POST', url: string, options: { readonly token?: string; readonly body?: unknown } = {}): Promise<{ status: number; body: Json }> {
  const res = await app.inject({
    method,
    url,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

/** A labelled counter's value from the registry (0 when absent). */
export async function counterValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return Number(value?.value ?? 0);
}
