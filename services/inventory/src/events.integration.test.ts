// The inventory service's event plumbing: the outbox (staged and drained as the runtime role)
// and the admin replay/redrive endpoints every service exposes.
import { stageEvent } from '@craig/mq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness();
});
afterAll(() => h.drop());

const admin = (url: string, payload: unknown) =>
  h.app.inject({ method: 'POST', url, payload: payload as Record<string, unknown>, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

describe('inventory events', () => {
  it('stages an event as the runtime role and the outbox worker publishes it to the bus', async () => {
    const staged = await h.sql.begin((tx) => stageEvent(tx, { aggregateType: 'library', aggregateId: '7', eventType: 'library.pruned', payload: { deleted: 3 } }));
    const result = await h.service.outbox.drainOnce();
    expect(result.published).toBe(1);
    const [row] = await h.admin`select published_at is not null as published from event_outbox where event_id = ${staged.eventId}`;
    expect(row).toEqual({ published: true });
  });

  it('replays inside the horizon, refuses outside it with the boundary, and needs the admin token', async () => {
    await h.admin`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, published_at)
      values (gen_random_uuid(), 'library', '1', 'library.pruned', '{}', '{}', now() - interval '2 days', now() - interval '2 days')`;
    const from = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const to = new Date(Date.now() - 86_400_000).toISOString();
    const ok = await admin('/v1/admin/events/replay', { from, to });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ replayed: 1 });
    const [row] = await h.admin`select count(*)::int as n from event_outbox where published_at is null and replayed_at is not null`;
    expect(row?.n).toBe(1);

    const refused = await admin('/v1/admin/events/replay', { from: new Date(Date.now() - 40 * 86_400_000).toISOString(), to });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ code: 'replay_out_of_window' });
    expect(JSON.stringify(refused.json())).toMatch(/horizon|boundary/);

    expect((await admin('/v1/admin/events/replay', { from: 'yesterday', to })).statusCode).toBe(400);
    expect((await admin('/v1/admin/events/replay', { from })).statusCode).toBe(400);
    expect((await h.app.inject({ method: 'POST', url: '/v1/admin/events/replay', payload: { from, to } })).statusCode).toBe(401);
  });

  it('redrives parked rows', async () => {
    const [parked] = await h.admin<{ id: string }[]>`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, parked_at, parked_reason, attempts)
      values (gen_random_uuid(), 'library', '2', 'library.pruned', '{}', '{}', now(), 'max_attempts', 10) returning id::text`;
    const res = await admin('/v1/admin/events/redrive', { ids: [parked!.id] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ redriven: 1 });
    const [row] = await h.admin`select parked_at from event_outbox where id = ${parked!.id}`;
    expect(row).toEqual({ parked_at: null });
    expect((await admin('/v1/admin/events/redrive', { ids: ['not-a-number'] })).statusCode).toBe(400);
  });
});
