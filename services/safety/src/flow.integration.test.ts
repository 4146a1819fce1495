// Cases → safety over a real transport (the PostgreSQL bus and RabbitMQ): each service on
// its own database and its own transport connection, outbox workers and the consumer running.
import { randomBytes } from 'node:crypto';
import { createClient, migrationTemplate, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, createRabbitMqTransport, decodeEnvelope, startConsumer, type EventEnvelope, type Subscription, type Transport } from '@craig/mq';
import { CASES_MIGRATION_SETS, createService as createCases } from '@craig/svc-cases';
import { eventually, rabbitmq, testDatabase, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../test/harness.ts';
import { SAFETY_MIGRATION_SETS } from './migrations.ts';
import { createService as createSafety } from './service.ts';

interface Fleet {
  cases: FastifyInstance;
  safety: FastifyInstance;
  safetyEvents: EventEnvelope[];
  stop(): Promise<void>;
}

type TransportFactory = (service: string) => Promise<Transport>;

async function startFleet(open: TransportFactory, consumerSuffix: string): Promise<Fleet> {
  const dbs: TestDatabase[] = await Promise.all([
    testDatabase({ prefix: 'cases_t', template: migrationTemplate(CASES_MIGRATION_SETS), max: 1 }),
    testDatabase({ prefix: 'safety_t', template: migrationTemplate(SAFETY_MIGRATION_SETS), max: 1 }),
  ]);
  const [casesDb, safetyDb] = dbs as [TestDatabase, TestDatabase];
  const [casesTransport, safetyTransport, listenerTransport] = await Promise.all([open('cases'), open('safety'), open('listener')]);
  const pools: Sql[] = [createClient(casesDb.url, { service: 'cases', max: 3, idleTimeoutSeconds: 5 }), createClient(safetyDb.url, { service: 'safety', max: 3, idleTimeoutSeconds: 5 })];
  const common = { registry: new Registry(), adminToken: 'an-admin-token-for-tests', retention: { outboxDays: 30, inboxDays: 31 }, outboxMaxAttempts: 10, outbox: { pollIntervalMs: 50 } };
  const cases = createCases({ ...common, sql: pools[0]!, databaseUrl: casesDb.url, transport: casesTransport });
  const safety = createSafety({ ...common, registry: new Registry(), sql: pools[1]!, databaseUrl: safetyDb.url, transport: safetyTransport, casesConsumerName: `safety.cases${consumerSuffix}` });
  const safetyEvents: EventEnvelope[] = [];
  const subscriptions: Subscription[] = [
    ...(await Promise.all(safety.consumers.map(({ handler, ...spec }) => startConsumer({ ...spec, maxRetries: 3, transport: safetyTransport, sql: pools[1]!, handler })))),
    await listenerTransport.subscribe({ consumer: `flow.listener${consumerSuffix}`, patterns: ['safety.*'], maxRetries: 0 }, async (d) => void safetyEvents.push(decodeEnvelope(d.body))),
  ];
  const stop = new AbortController();
  const workers = [cases.outbox.run(stop.signal), safety.outbox.run(stop.signal)];
  return {
    cases: cases.app,
    safety: safety.app,
    safetyEvents,
    async stop() {
      stop.abort();
      await Promise.all(workers);
      for (const s of subscriptions) await s.close();
      await Promise.all([cases.app.close(), safety.app.close()]);
      await Promise.all([casesTransport.close(), safetyTransport.close(), listenerTransport.close()]);
      await Promise.all(pools.map((p) => p.end({ timeout: 1 })));
      await Promise.all(dbs.map((d) => d.drop()));
    },
  };
}

async function flow(fleet: Fleet): Promise<void> {
  const opened = await call(fleet.cases, 'POST', '/v1/cases', { subject: 'flow' });
  expect(opened.status).toBe(201);
  const caseId = opened.body.id as string;
  // Refused as unknown until case.opened has travelled cases → transport → safety's inbox.
  let report: { id: string } | undefined;
  await eventually(async () => {
    const res = await call(fleet.safety, 'POST', '/v1/safety-reports', { caseId, severity: 'high', summary: 'flow' });
    if (res.status === 409) expect(res.body.error.code).toBe('case_unknown');
    expect(res.status).toBe(201);
    report = res.body;
  }, { timeoutMs: 15_000 });
  await eventually(() => expect(fleet.safetyEvents.map((e) => [e.eventType, e.aggregateId, e.source])).toEqual([['safety.reported', report!.id, 'safety']]), { timeoutMs: 15_000 });
  expect(fleet.safetyEvents[0]!.payload).toEqual({ reportId: report!.id, caseId, severity: 'high', reportedAt: expect.any(String) });
}

describe('cases → safety over the PostgreSQL bus', () => {
  let bus: TestDatabase;
  let fleet: Fleet;
  beforeAll(async () => {
    bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), max: 1 });
    fleet = await startFleet((service) => createPostgresBusTransport({ url: bus.url, service }), '');
  });
  afterAll(async () => {
    await fleet.stop();
    await bus.drop();
  });

  it('open case → safety report accepted and safety.reported published', () => flow(fleet));
});

describe('cases → safety over RabbitMQ', () => {
  const exchange = `craig.test.flow.${randomBytes(4).toString('hex')}`;
  const suffix = `.${randomBytes(3).toString('hex')}`;
  let url: string;
  let fleet: Fleet;
  beforeAll(async () => {
    url = await rabbitmq();
    fleet = await startFleet((service) => createRabbitMqTransport({ url, exchange, service }), suffix);
  });
  afterAll(async () => {
    await fleet.stop();
    const conn = await connect(url);
    const ch = await conn.createChannel();
    for (const q of [`safety.cases${suffix}`, `flow.listener${suffix}`, 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
    await ch.deleteExchange(exchange);
    await ch.deleteExchange(`${exchange}.dlx`);
    await conn.close();
  });

  it('open case → safety report accepted and safety.reported published', () => flow(fleet));
});
