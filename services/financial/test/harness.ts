import { randomBytes } from 'node:crypto';
import { createClient, migrationTemplate, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, createRabbitMqTransport, MQ_MIGRATIONS, OutboxWorker, type Transport } from '@craig/mq';
import { rabbitmq, testDatabase, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { financialMigrationSets } from '../src/migrations.ts';
import { createService, type FinancialService, type FinancialSweepDeps } from '../src/service.ts';

export const ADMIN_TOKEN = 'an-admin-token-for-tests';
export type TransportKind = 'postgres' | 'rabbitmq';

/** A transport of either kind on scratch resources (its own bus database, or its own exchange). */
export interface TestTransport {
  readonly kind: TransportKind;
  open(service: string): Promise<Transport>;
  drop(): Promise<void>;
}

export async function testTransport(kind: TransportKind): Promise<TestTransport> {
  if (kind === 'postgres') {
    const bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'financial_bus', max: 1 });
    return { kind, open: (service) => createPostgresBusTransport({ url: bus.url, service, pollIntervalMs: 100 }), drop: () => bus.drop() };
  }
  const url = await rabbitmq();
  const exchange = `craig.test.financial.${randomBytes(4).toString('hex')}`;
  return {
    kind,
    open: (service) => createRabbitMqTransport({ url, exchange, service }),
    async drop() {
      const conn = await connect(url);
      try {
        const ch = await conn.createChannel();
        for (const c of ['financial.placements', 'dead-letter']) await ch.deleteQueue(`${exchange}.${c}`);
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
  readonly bus: TestTransport;
  readonly transport: Transport;
  readonly sql: Sql;
  readonly service: FinancialService;
  readonly app: FastifyInstance;
  readonly registry: Registry;
  drop(): Promise<void>;
}

/** A migrated financial database, a transport, and the service on them. */
export async function serviceHarness(options: { readonly transport?: TransportKind; readonly prefix?: string; readonly sweep?: FinancialSweepDeps } = {}): Promise<ServiceHarness> {
  const [db, bus] = await Promise.all([
    testDatabase({ template: migrationTemplate(financialMigrationSets()), prefix: options.prefix ?? 'financial_t', max: 2 }),
    testTransport(options.transport ?? 'postgres'),
  ]);
  const transport = await bus.open('financial-test');
  const sql = createClient(db.url, { service: 'financial-test', max: 3, idleTimeoutSeconds: 5 });
  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: db.url,
    registry,
    adminToken: ADMIN_TOKEN,
    transport,
    retention: { outboxDays: 30, inboxDays: 31 },
    sweep: options.sweep ?? { retentionDays: 90 },
    outboxMaxAttempts: 10,
    inboxMaxRetries: 2,
    consumers: { retryDelayMs: () => 10 },
  });
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
      await service.app.close();
      await transport.close({ graceMs: 0 });
      await sql.end({ timeout: 1 });
      await db.drop();
      await bus.drop();
    },
  };
}

/** A producer service (placements): its own database with the outbox, and an outbox worker on the transport. */
export interface Producer {
  readonly db: TestDatabase;
  readonly outbox: OutboxWorker;
  readonly transport: Transport;
  drop(): Promise<void>;
}

export async function producer(bus: TestTransport, service = 'placements'): Promise<Producer> {
  const db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: `financial_${service}`, max: 2 });
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
    ...(options.token ? { headers: { authorization: `Bearer ${options.token}` } } : {}),
    ...(options.body === undefined ? {} : { payload: options.body as object }),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

/** A labelled metric's value from the registry (0 when absent). */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return Number(value?.value ?? 0);
}

/**
 * Queue rows with explicit past timestamps (an INSERT overrides the defaults), as the service's
 * writers would have left them: `settled` ones carry an import, as a settled row always does.
 */
export async function seedQueue(sql: Sql, rows: { readonly status: 'pending' | 'matched' | 'settled'; readonly count: number; readonly ageDays: number; readonly placement?: string }): Promise<void> {
  const [imp] = await sql<{ id: string }[]>`
    insert into subsidy_imports (source, period, status, row_count, matched_count, completed_at)
    values ('seed-' || gen_random_uuid(), date_trunc('month', now())::date, 'completed', 0, 0, now())
    returning id::text`;
  const done = rows.status !== 'pending';
  await sql`
    insert into subsidy_reconcile_queue (event_id, placement_id, case_id, kind, amount, status, import_id, enqueued_at, matched_at, settled_at)
    select gen_random_uuid(), coalesce(${rows.placement ?? null}, 'p-' || g), 'c-1', 'placement_started',
           ${done ? '10.00' : null}::numeric, ${rows.status},
           ${done ? imp!.id : null}::bigint,
           now() - make_interval(days => ${rows.ageDays} + 2, secs => g),
           ${done ? sql`now() - make_interval(days => ${rows.ageDays} + 1, secs => g)` : sql`null`},
           ${rows.status === 'settled' ? sql`now() - make_interval(days => ${rows.ageDays}, secs => g)` : sql`null`}
    from generate_series(1, ${rows.count}) g`;
}
