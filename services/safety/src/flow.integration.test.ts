// Cases → safety over a real transport (the PostgreSQL bus and RabbitMQ): each service on
// its own database and its own transport connection, outbox workers and the consumer running.
import { startFleet, type TransportKind } from '@craig/service-testkit';
import { CASES_MIGRATION_SETS, createService as createCases } from '@craig/svc-cases';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../test/harness.ts';
import { SAFETY_MIGRATION_SETS } from './migrations.ts';
import { createService as createSafety } from './service.ts';

type Fleet = Awaited<ReturnType<typeof start>>;

/** Cases and safety, each on its own database and transport connection, over `kind`. */
const start = (kind: TransportKind) =>
  startFleet(kind, {
    producer: { name: 'cases', migrations: CASES_MIGRATION_SETS, build: (deps) => createCases(deps) },
    consumer: { name: 'safety', migrations: SAFETY_MIGRATION_SETS, build: (deps, suffix) => createSafety({ ...deps, casesConsumerName: `safety.cases${suffix}` }) },
    listen: ['safety.*'],
  });

async function flow(fleet: Fleet): Promise<void> {
  const opened = await call(fleet.producer.app, 'POST', '/v1/cases', { subject: 'flow' });
  expect(opened.status).toBe(201);
  const caseId = opened.body.id as string;
  // Refused as unknown until case.opened has travelled cases → transport → safety's inbox.
  let report: { id: string } | undefined;
  await eventually(async () => {
    const res = await call(fleet.consumer.app, 'POST', '/v1/safety-reports', { caseId, severity: 'high', summary: 'flow' });
    if (res.status === 409) expect(res.body.error.code).toBe('case_unknown');
    expect(res.status).toBe(201);
    report = res.body;
  }, { timeoutMs: 15_000 });
  await eventually(() => expect(fleet.events.map((e) => [e.eventType, e.aggregateId, e.source])).toEqual([['safety.reported', report!.id, 'safety']]), { timeoutMs: 15_000 });
  expect(fleet.events[0]!.payload).toEqual({ reportId: report!.id, caseId, severity: 'high', reportedAt: expect.any(String) });
}

describe.each([
  { kind: 'postgres', over: 'the PostgreSQL bus' },
  { kind: 'rabbitmq', over: 'RabbitMQ' },
] as const)('cases → safety over $over', ({ kind }) => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await start(kind);
  });
  afterAll(() => fleet.stop());

  it('open case → safety report accepted and safety.reported published', () => flow(fleet));
});
