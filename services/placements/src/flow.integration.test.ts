// Cases → placements over a real transport (the PostgreSQL bus and RabbitMQ): each service on
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
import { PLACEMENTS_MIGRATION_SETS } from './migrations.ts';
import { createService as createPlacements } from './service.ts';

interface Fleet {
  cases: FastifyInstance;
  placements: FastifyInstance;
  placementEvents: EventEnvelope[];
  stop(): Promise<void>;
}

type TransportFactory = (service: string) => Promise<Transport>;

async function startFleet(open: TransportFactory, consumerSuffix: string): Promise<Fleet> {
  const dbs: TestDatabase[] = await Promise.all([
    testDatabase({ prefix: 'cases_t', template: migrationTemplate(CASES_MIGRATION_SETS), max: 1 }),
    testDatabase({ prefix: 'placements_t', template: migrationTemplate(PLACEMENTS_MIGRATION_SETS), max: 1 }),
  ]);
  const [casesDb, placementsDb] = dbs as [TestDatabase, TestDatabase];
  const [casesTransport, placementsTransport, listenerTransport] = await Promise.all([open('cases'), open('placements'), open('listener')]);
  const pools: Sql[] = [createClient(casesDb.url, { service: 'cases', max: 3, idleTimeoutSeconds: 5 }), createClient(placementsDb.url, { service: 'placements', max: 3, idleTimeoutSeconds: 5 })];
  const common = { registry: new Registry(), adminToken: 'an-admin-token-for-tests', retention: { outboxDays: 30, inboxDays: 31 }, outboxMaxAttempts: 10, outbox: { pollIntervalMs: 50 } };
  const cases = createCases({ ...common, sql: pools[0]!, databaseUrl: casesDb.url, transport: casesTransport });
  const placements = createPlacements({ ...common, registry: new Registry(), sql: pools[1]!, databaseUrl: placementsDb.url, transport: placementsTransport, casesConsumerName: `placements.cases${consumerSuffix}` });
  const placementEvents: EventEnvelope[] = [];
  const subscriptions: Subscription[] = [
    ...(await Promise.all(placements.consumers.map(({ handler, ...spec }) => startConsumer({ ...spec, maxRetries: 3, transport: placementsTransport, sql: pools[1]!, handler })))),
    await listenerTransport.subscribe({ consumer: `flow.listener${consumerSuffix}`, patterns: ['placement.*'], maxRetries: 0 }, async (d) => void placementEvents.push(decodeEnvelope(d.body))),
  ];
  const stop = new AbortController();
  const workers = [cases.outbox.run(stop.signal), placements.outbox.run(stop.signal)];
  return {
    cases: cases.app,
    placements: placements.app,
    placementEvents,
    async stop() {
      stop.abort();
      await Promise.all(workers);
      for (const s of subscriptions) await s.close();
      await Promise.all([cases.app.close(), placements.app.close()]);
      await Promise.all([casesTransport.close(), placementsTransport.close(), listenerTransport.close()]);
      await Promise.all(pools.map((p) => p.end({ timeout: 1 })));
      await Promise.all(dbs.map((d) => d.drop()));
    },
  };
}

async function flow(fleet: Fleet): Promise<void> {
  const opened = await call(fleet.cases, 'POST', '/v1/cases', { subject: 'flow' });
  expect(opened.status).toBe(201);
  const caseId = opened.body.id as string;
  // Refused as unknown until case.opened has travelled cases → transport → placements' inbox.
  let placement: { id: string } | undefined;
  await eventually(async () => {
    const res = await call(fleet.placements, 'POST', '/v1/placements', { caseId, provider: 'Harbor Group Home' });
    if (res.status === 409) expect(res.body.error.code).toBe('case_unknown');
    expect(res.status).toBe(201);
    placement = res.body;
  }, { timeoutMs: 15_000 });
  await eventually(() => expect(fleet.placementEvents.map((e) => e.eventType)).toEqual(['placement.started']), { timeoutMs: 15_000 });

  expect((await call(fleet.cases, 'POST', `/v1/cases/${caseId}/close`)).status).toBe(200);
  // case.closed ends the active placement and placement.ended is published in turn.
  await eventually(() => expect(fleet.placementEvents.map((e) => e.eventType)).toEqual(['placement.started', 'placement.ended']), { timeoutMs: 15_000 });
  const endedEvent = fleet.placementEvents[1]!;
  expect(endedEvent).toMatchObject({ aggregateId: placement!.id, source: 'placements', payload: { placementId: placement!.id, caseId, reason: 'case_closed' } });
  expect((await call(fleet.placements, 'GET', `/v1/placements/${placement!.id}`)).body).toMatchObject({ endReason: 'case_closed', endedAt: expect.any(String) });
  const refused = await call(fleet.placements, 'POST', '/v1/placements', { caseId, provider: 'Harbor Group Home' });
  expect(refused.status).toBe(409);
  expect(refused.body.error).toMatchObject({ code: 'case_closed', caseId });
}

describe('cases → placements over the PostgreSQL bus', () => {
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

  it('open case → placement accepted; close case → placement ended and placement.ended published', () => flow(fleet));
});

describe('cases → placements over RabbitMQ', () => {
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
    for (const q of [`placements.cases${suffix}`, `flow.listener${suffix}`, 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
    await ch.deleteExchange(exchange);
    await ch.deleteExchange(`${exchange}.dlx`);
    await conn.close();
  });

  it('open case → placement accepted; close case → placement ended and placement.ended published', () => flow(fleet));
});
