// placement.* through the inbox over a real transport (both kinds): one queue row per event,
// even when the event is delivered twice.
import { replayEvents, stageEvent } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { producer, serviceHarness, type Producer, type ServiceHarness, type TransportKind } from '../test/harness.ts';

describe.each<TransportKind>(['postgres', 'rabbitmq'])('financial.placements over the %s transport', (kind) => {
  let h: ServiceHarness;
  let placements: Producer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    h = await serviceHarness({ transport: kind, prefix: `financial_c_${kind.slice(0, 2)}` });
    placements = await producer(h.bus);
    const consumers = await h.service.startConsumers();
    close = () => consumers.close({ graceMs: 0 });
  });
  afterAll(async () => {
    await close();
    await placements.drop();
    await h.drop();
  });

  // Handlers run concurrently (prefetch 8): the order of arrival is not the order of staging.
  const queue = () => h.sql<{ placement_id: string; case_id: string | null; kind: string; status: string }[]>`
    select placement_id, case_id, kind, status from subsidy_reconcile_queue order by placement_id, kind desc`;

  it('enqueues one pending row per placement.started / placement.ended, once even when delivered twice', async () => {
    const started = new Date();
    await placements.db.sql.begin(async (tx) => {
      await stageEvent(tx, { aggregateType: 'placement', aggregateId: 'pl-1', eventType: 'placement.started', payload: { placementId: 'pl-1', caseId: 'case-9', provider: 'Harbor' } });
      await stageEvent(tx, { aggregateType: 'placement', aggregateId: 'pl-1', eventType: 'placement.ended', payload: { placementId: 'pl-1', caseId: 'case-9', reason: 'requested' } });
      // Another placement event, no business of the queue: acknowledged, nothing enqueued.
      await stageEvent(tx, { aggregateType: 'placement', aggregateId: 'pl-1', eventType: 'placement.moved', payload: {} });
    });
    expect((await placements.outbox.drainOnce()).published).toBe(3);
    await eventually(async () => expect((await h.sql`select count(*)::int as n from event_inbox where consumer = 'financial.placements'`)[0]!.n).toBe(3), { timeoutMs: 15_000 });
    expect(await queue()).toEqual([
      { placement_id: 'pl-1', case_id: 'case-9', kind: 'placement_started', status: 'pending' },
      { placement_id: 'pl-1', case_id: 'case-9', kind: 'placement_ended', status: 'pending' },
    ]);

    // The producer replays the same events: a second delivery of each, same event ids.
    const replay = await replayEvents(placements.db.sql, { from: new Date(started.getTime() - 60_000), to: new Date(Date.now() + 60_000) }, { outboxDays: 30, inboxDays: 31 });
    expect(replay.replayed).toBe(3);
    expect((await placements.outbox.drainOnce()).published).toBe(3);
    await eventually(
      async () => {
        const metrics = await h.registry.getMetricsAsJSON();
        const deliveries = metrics.find((m) => m.name === 'event_inbox_deliveries_total')!.values;
        expect(deliveries.find((v) => v.labels.outcome === 'duplicate')?.value).toBe(3);
      },
      { timeoutMs: 15_000 },
    );
    expect(await queue()).toHaveLength(2);
    // A case id that is not a string is left out, never coerced.
    await placements.db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'placement', aggregateId: 'pl-2', eventType: 'placement.started', payload: { caseId: 42 } }));
    await placements.outbox.drainOnce();
    await eventually(async () => expect(await queue()).toHaveLength(3), { timeoutMs: 15_000 });
    expect((await queue())[2]).toEqual({ placement_id: 'pl-2', case_id: null, kind: 'placement_started', status: 'pending' });
  });
});
