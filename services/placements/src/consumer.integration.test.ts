// The case.* consumer: case refs kept idempotently and in any order; a case.closed ends the
// case's active placements in the inbox transaction, staging placement.ended for each.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { inboxHandler, encodeEnvelope } from '@craig/mq';
import { call, placementsHarness, type PlacementsHarness } from '../test/harness.ts';
import { CASES_CONSUMER } from './consumer.ts';
import { startPlacement } from './placement-store.ts';

let h: PlacementsHarness;
beforeAll(async () => {
  h = await placementsHarness();
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate placements, case_refs, event_outbox, event_inbox`;
});

const ref = async (caseId: string) => (await h.db.sql`select status from case_refs where case_id = ${caseId}`)[0]?.status as string | undefined;
const ended = () => h.db.sql<{ aggregate_id: string; payload: Record<string, unknown> }[]>`select aggregate_id, payload from event_outbox where event_type = 'placement.ended' order by id`;

describe('placements case.* consumer', () => {
  it('records case.opened once: a duplicate delivery of the same event is skipped', async () => {
    const caseId = randomUUID();
    const eventId = randomUUID();
    await h.deliver('case.opened', caseId, eventId);
    await h.deliver('case.opened', caseId, eventId);
    expect(await ref(caseId)).toBe('open');
    const [inbox] = await h.db.sql`select count(*)::int as n, min(consumer) as consumer from event_inbox`;
    expect(inbox).toEqual({ n: 1, consumer: CASES_CONSUMER });
  });

  it('a case.closed before its case.opened leaves the case closed', async () => {
    const caseId = randomUUID();
    await h.deliver('case.closed', caseId);
    expect(await ref(caseId)).toBe('closed');
    await h.deliver('case.opened', caseId);
    expect(await ref(caseId)).toBe('closed');
    const refused = await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'P' });
    expect(refused.body.error).toMatchObject({ code: 'case_closed' });
  });

  it('case.closed ends the active placements of that case (placement.ended, reason case_closed), once', async () => {
    const [caseId, other] = [randomUUID(), randomUUID()];
    await h.deliver('case.opened', caseId);
    await h.deliver('case.opened', other);
    const active = [(await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'A' })).body, (await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'B' })).body];
    const done = (await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'C' })).body;
    await call(h.app, 'POST', `/v1/placements/${done.id}/end`);
    const untouched = (await call(h.app, 'POST', '/v1/placements', { caseId: other, provider: 'D' })).body;

    const closeId = randomUUID();
    await h.deliver('case.closed', caseId, closeId);
    const rows = await h.db.sql`select id, end_reason from placements order by started_at, id`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.end_reason]))).toEqual({ [active[0].id]: 'case_closed', [active[1].id]: 'case_closed', [done.id]: 'requested', [untouched.id]: null });
    const byCase = (await ended()).filter((e) => e.payload.reason === 'case_closed');
    expect(byCase.map((e) => e.aggregate_id).sort()).toEqual([active[0].id, active[1].id].sort());
    expect(byCase[0]!.payload).toMatchObject({ caseId, reason: 'case_closed', endedAt: expect.any(String) });

    // The same event again (redelivery) and a second close event (a replay) change nothing.
    await h.deliver('case.closed', caseId, closeId);
    await h.deliver('case.closed', caseId);
    expect((await ended()).filter((e) => e.payload.reason === 'case_closed')).toHaveLength(2);
  });

  it('a case.closed racing a placement start waits for it and then ends it too', async () => {
    const caseId = randomUUID();
    await h.deliver('case.opened', caseId);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: (id: string) => void;
    const placementId = new Promise<string>((resolve) => (started = resolve));
    // The start has checked the case and inserted, but not committed yet.
    const starting = h.sql.begin(async (tx) => {
      const p = await startPlacement(tx, caseId, 'A');
      started(p.id);
      await gate;
    });
    const id = await placementId;
    let closed = false;
    const closing = h.deliver('case.closed', caseId).then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(closed).toBe(false);
    release();
    await starting;
    await closing;
    const [row] = await h.db.sql`select end_reason from placements where id = ${id}`;
    expect(row).toEqual({ end_reason: 'case_closed' });
    expect((await ended()).map((e) => e.aggregate_id)).toEqual([id]);
  });

  it('a failing handler rolls back the dedup record, the case ref, the ended placements and their events together', async () => {
    const caseId = randomUUID();
    await h.deliver('case.opened', caseId);
    const placement = (await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'A' })).body;
    const [spec] = h.service.consumers;
    const failing = inboxHandler({
      sql: h.sql,
      consumer: spec!.consumer,
      handler: async (event, tx, delivery) => {
        await spec!.handler(event, tx, delivery);
        throw new Error('crash after the work');
      },
    });
    const eventId = randomUUID();
    const body = encodeEnvelope({ eventId, eventType: 'case.closed', aggregateType: 'case', aggregateId: caseId, source: 'cases', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: '{}' });
    await expect(failing({ consumer: spec!.consumer, eventId, routingKey: 'case.closed', body, headers: {}, attempt: 1, deliveries: 1, redelivered: false })).rejects.toThrow('crash after the work');
    expect(await ref(caseId)).toBe('open');
    expect((await call(h.app, 'GET', `/v1/placements/${placement.id}`)).body.endedAt).toBeNull();
    expect(await ended()).toHaveLength(0);
    const [inbox] = await h.db.sql`select count(*)::int as n from event_inbox where event_id = ${eventId}`;
    expect(inbox!.n).toBe(0);
  });

  it('refuses an event whose case id is not a UUID (dead-lettered by the transports) and ignores other case.* types', async () => {
    await expect(h.deliver('case.closed', 'case-7')).rejects.toMatchObject({ code: 'invalid_event', field: 'aggregateId', value: 'case-7' });
    const caseId = randomUUID();
    await h.deliver('case.reassigned', caseId);
    expect(await ref(caseId)).toBeUndefined();
    const [inbox] = await h.db.sql`select count(*)::int as n from event_inbox where event_type = 'case.reassigned'`;
    expect(inbox!.n).toBe(1);
  });
});
