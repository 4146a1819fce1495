// The fleet-wide dedup horizon at runtime, cases → placements over a real transport (the
// PostgreSQL bus and RabbitMQ): cases' outbox worker puts its windows on every message, and
// placements checks them on every delivery against its own inbox window. A placements inbox
// window of 30 days under cases' outbox window of 30 is counted (and recorded for `pnpm xtask
// invariants`), never refused: the case still reaches placements.
import { startFleet, type TransportKind } from '@craig/service-testkit';
import { CASES_MIGRATION_SETS, createService as createCases } from '@craig/svc-cases';
import { eventually } from '@craig/testkit';
import { describe, expect, it } from 'vitest';
import { call } from '../test/harness.ts';
import { PLACEMENTS_MIGRATION_SETS } from './migrations.ts';
import { createService as createPlacements } from './service.ts';

const start = (kind: TransportKind, placementsWindows: { outboxDays: number; inboxDays: number }) =>
  startFleet(kind, {
    producer: { name: 'cases', migrations: CASES_MIGRATION_SETS, retention: { outboxDays: 30, inboxDays: 31 }, build: (deps) => createCases(deps) },
    consumer: { name: 'placements', migrations: PLACEMENTS_MIGRATION_SETS, retention: placementsWindows, build: (deps, suffix) => createPlacements({ ...deps, casesConsumerName: `placements.cases${suffix}` }) },
    listen: ['case.*'],
  });

/** A sample of placements' real `GET /metrics`, 0 when absent. */
async function sample(fleet: Awaited<ReturnType<typeof start>>, name: string, labels: string): Promise<number> {
  const text = (await fleet.consumer.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/** Open a case on cases and wait until placements heard of it (a placement for it is accepted). */
async function openCaseAndWait(fleet: Awaited<ReturnType<typeof start>>): Promise<void> {
  const opened = await call(fleet.producer.app, 'POST', '/v1/cases', { subject: 'horizon' });
  expect(opened.status).toBe(201);
  await eventually(async () => expect((await call(fleet.consumer.app, 'POST', '/v1/placements', { caseId: opened.body.id, provider: 'Harbor' })).status).toBe(201), { timeoutMs: 15_000 });
}

describe.each([
  { kind: 'postgres', over: 'the PostgreSQL bus' },
  { kind: 'rabbitmq', over: 'RabbitMQ' },
] as const)('the dedup horizon between cases and placements over $over', ({ kind }) => {
  it("counts a delivery from cases (outbox 30 d) to placements (inbox 30 d) as a violation, records it, and still processes it", async () => {
    const fleet = await start(kind, { outboxDays: 29, inboxDays: 30 });
    try {
      await openCaseAndWait(fleet);
      expect(fleet.events.map((e) => e.eventType)).toContain('case.opened');
      expect(await sample(fleet, 'dedup_horizon_violations_total', 'producer="cases",consumer="placements"')).toBeGreaterThanOrEqual(1);
      expect(await sample(fleet, 'dedup_horizon_unchecked_total', 'producer="cases",consumer="placements",reason="missing"')).toBe(0);
      const rows = await fleet.sql.consumer`select producer, producer_outbox_days, producer_inbox_days, consumer_inbox_days, violated from dedup_horizon_observations`;
      expect(rows).toEqual([{ producer: 'cases', producer_outbox_days: 30, producer_inbox_days: 31, consumer_inbox_days: 30, violated: true }]);
    } finally {
      await fleet.stop();
    }
  });

  it('counts nothing with the default windows (placements keeps 31 d against cases’ 30 d)', async () => {
    const fleet = await start(kind, { outboxDays: 30, inboxDays: 31 });
    try {
      await openCaseAndWait(fleet);
      expect(await sample(fleet, 'dedup_horizon_violations_total', 'producer="cases",consumer="placements"')).toBe(0);
      // The check ran (it recorded what it saw), and found the horizon kept.
      const rows = await fleet.sql.consumer`select producer, violated from dedup_horizon_observations`;
      expect(rows).toEqual([{ producer: 'cases', violated: false }]);
    } finally {
      await fleet.stop();
    }
  });
});
