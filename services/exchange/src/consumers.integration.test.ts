// `exchange.cases` on `case.opened`, on both transports, fed by a real producer's outbox: the
// send job and the screening run are written once per event, in the inbox transaction.
import type { Subscription } from '@craig/mq';
import { replayEvents, stageEvent } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterValue, producer, serviceHarness, type Producer, type ServiceHarness } from '../test/harness.ts';

describe.each(['postgres', 'rabbitmq'] as const)('exchange consumer on the %s transport', (kind) => {
  let h: ServiceHarness;
  let cases: Producer;
  let consumer: Subscription;

  beforeAll(async () => {
    h = await serviceHarness({ transport: kind, prefix: `exchange_cons_${kind.slice(0, 2)}` });
    cases = await producer(h.bus, 'cases');
    consumer = await h.service.startConsumers();
  });
  afterAll(async () => {
    await consumer?.close({ graceMs: 0 });
    await cases?.drop();
    await h?.drop();
  });

  const written = async (caseId: string) => {
    const [row] = await h.db.sql<{ jobs: number; runs: number; members: string[] }[]>`
      select (select count(*)::int from exchange_send_jobs where case_id = ${caseId}) as jobs,
             (select count(*)::int from ssa_screening_runs where case_id = ${caseId}) as runs,
             (select coalesce(array_agg(m.person_ref order by m.id), '{}') from ssa_screening_members m join ssa_screening_runs r on r.id = m.run_id where r.case_id = ${caseId}) as members`;
    return row!;
  };

  it('queues one send job and starts one screening run per case.opened, even when the event is delivered twice', async () => {
    await cases.db.sql.begin((tx) =>
      stageEvent(tx, { aggregateType: 'case', aggregateId: 'case-1', eventType: 'case.opened', payload: { destination: 'partner-a', personRefs: ['p-1', 'p-2'] } }),
    );
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    await eventually(async () => expect(await written('case-1')).toEqual({ jobs: 1, runs: 1, members: ['p-1', 'p-2'] }), { timeoutMs: 10_000 });
    expect(await h.db.sql`select destination, status, attempts from exchange_send_jobs where case_id = 'case-1'`).toEqual([{ destination: 'partner-a', status: 'queued', attempts: 0 }]);
    expect(await h.db.sql`select status, completed_at, invalidated_at from ssa_screening_runs where case_id = 'case-1'`).toEqual([{ status: 'running', completed_at: null, invalidated_at: null }]);

    // Delivered again: the producer replays its published row; the inbox record makes it a no-op.
    const duplicatesBefore = await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'exchange.cases', outcome: 'duplicate' });
    const replayed = await replayEvents(cases.db.sql, { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() }, { outboxDays: 30, inboxDays: 31 });
    expect(replayed).toMatchObject({ replayed: 1 });
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    await eventually(
      async () => expect(await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'exchange.cases', outcome: 'duplicate' })).toBe(duplicatesBefore + 1),
      { timeoutMs: 10_000 },
    );
    expect(await written('case-1')).toEqual({ jobs: 1, runs: 1, members: ['p-1', 'p-2'] });
    expect(await h.db.sql`select consumer, event_type from event_inbox`).toEqual([{ consumer: 'exchange.cases', event_type: 'case.opened' }]);
  });

  it('screens the child and the guardian by default, ignores other case events, and writes nothing for a malformed payload', async () => {
    await cases.db.sql.begin(async (tx) => {
      await stageEvent(tx, { aggregateType: 'case', aggregateId: 'case-2', eventType: 'case.closed', payload: {} });
      await stageEvent(tx, { aggregateType: 'case', aggregateId: 'case-3', eventType: 'case.opened', payload: { personRefs: 'not-a-list' } });
      await stageEvent(tx, { aggregateType: 'case', aggregateId: 'case-4', eventType: 'case.opened', payload: {} });
    });
    expect((await cases.outbox.drainOnce()).published).toBe(3);
    await eventually(async () => expect(await written('case-4')).toEqual({ jobs: 1, runs: 1, members: ['case-4:child', 'case-4:guardian'] }), { timeoutMs: 10_000 });
    expect((await h.db.sql`select destination from exchange_send_jobs where case_id = 'case-4'`)[0]).toEqual({ destination: 'ssa-gateway' });
    // The malformed event fails its handler and is dead-lettered; nothing of it was written.
    await eventually(async () => expect(await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'exchange.cases', outcome: 'failed' })).toBeGreaterThanOrEqual(1), {
      timeoutMs: 10_000,
    });
    expect(await written('case-3')).toEqual({ jobs: 0, runs: 0, members: [] });
    expect(await written('case-2')).toEqual({ jobs: 0, runs: 0, members: [] });
    expect((await h.db.sql`select count(*)::int as n from event_inbox where event_type = 'case.closed'`)[0]!.n).toBe(0);
  });
});
