// Cases → placements over a real transport (the PostgreSQL bus and RabbitMQ): each service on
// its own database and its own transport connection, outbox workers and the consumer running.
import { startFleet, type TransportKind } from '@craig/service-testkit';
import { CASES_MIGRATION_SETS, createService as createCases } from '@craig/svc-cases';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../test/harness.ts';
import { PLACEMENTS_MIGRATION_SETS } from './migrations.ts';
import { createService as createPlacements } from './service.ts';

type Fleet = Awaited<ReturnType<typeof start>>;

/** Cases and placements, each on its own database and transport connection, over `kind`. */
const start = (kind: TransportKind) =>
  startFleet(kind, {
    producer: { name: 'cases', migrations: CASES_MIGRATION_SETS, build: (deps) => createCases(deps) },
    consumer: { name: 'placements', migrations: PLACEMENTS_MIGRATION_SETS, build: (deps, suffix) => createPlacements({ ...deps, casesConsumerName: `placements.cases${suffix}` }) },
    listen: ['placement.*'],
  });

async function flow(fleet: Fleet): Promise<void> {
  const opened = await call(fleet.producer.app, 'POST', '/v1/cases', { subject: 'flow' });
  expect(opened.status).toBe(201);
  const caseId = opened.body.id as string;
  // Refused as unknown until case.opened has travelled cases → transport → placements' inbox.
  let placement: { id: string } | undefined;
  await eventually(async () => {
    const res = await call(fleet.consumer.app, 'POST', '/v1/placements', { caseId, provider: 'Harbor Group Home' });
    if (res.status === 409) expect(res.body.error.code).toBe('case_unknown');
    expect(res.status).toBe(201);
    placement = res.body;
  }, { timeoutMs: 15_000 });
  await eventually(() => expect(fleet.events.map((e) => e.eventType)).toEqual(['placement.started']), { timeoutMs: 15_000 });

  expect((await call(fleet.producer.app, 'POST', `/v1/cases/${caseId}/close`)).status).toBe(200);
  // case.closed ends the active placement and placement.ended is published in turn.
  await eventually(() => expect(fleet.events.map((e) => e.eventType)).toEqual(['placement.started', 'placement.ended']), { timeoutMs: 15_000 });
  const endedEvent = fleet.events[1]!;
  expect(endedEvent).toMatchObject({ aggregateId: placement!.id, source: 'placements', payload: { placementId: placement!.id, caseId, reason: 'case_closed' } });
  expect((await call(fleet.consumer.app, 'GET', `/v1/placements/${placement!.id}`)).body).toMatchObject({ endReason: 'case_closed', endedAt: expect.any(String) });
  const refused = await call(fleet.consumer.app, 'POST', '/v1/placements', { caseId, provider: 'Harbor Group Home' });
  expect(refused.status).toBe(409);
  expect(refused.body.error).toMatchObject({ code: 'case_closed', caseId });
}

describe.each([
  { kind: 'postgres', over: 'the PostgreSQL bus' },
  { kind: 'rabbitmq', over: 'RabbitMQ' },
] as const)('cases → placements over $over', ({ kind }) => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await start(kind);
  });
  afterAll(() => fleet.stop());

  it('open case → placement accepted; close case → placement ended and placement.ended published', () => flow(fleet));
});
