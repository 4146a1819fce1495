// Replay: inside the horizon it works, outside it is refused with the boundary, a replayed row
// past the horizon at publish time is parked, and a replay and a prune cycle never overlap (the
// replay holds the sweep's lock), so a replayed row is never pruned.
import { createClient, type Sql } from '@craig/db';
import { eventually, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busDatabase, pendingCount, seedOutbox, serviceDatabase } from '../test/helpers.ts';
import { decodeEnvelope } from './envelope.ts';
import { InvalidReplayRangeError, ReplayOutOfWindowError } from './errors.ts';
import { OutboxWorker } from './outbox-worker.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { redriveParked } from './redrive.ts';
import { replayEvents } from './replay.ts';
import { pruneTransportTables } from './transport-prune.ts';
import type { Subscription, Transport } from './transport.ts';

let db: TestDatabase;
let bus: TestDatabase;
let pool: Sql;
let transport: Transport;
let observer: Subscription;
const seen: string[] = [];
const windows = { outboxDays: 30, inboxDays: 31 };
const DAY = 86_400_000;

beforeAll(async () => {
  [db, bus] = await Promise.all([serviceDatabase(2), busDatabase(1)]);
  pool = createClient(db.url, { service: 'replay-test', max: 2 });
  transport = await createPostgresBusTransport({ url: bus.url, service: 'replay-test', pollIntervalMs: 50 });
  observer = await transport.subscribe({ consumer: 'observer', patterns: ['#'], maxRetries: 0, prefetch: 1 }, async (d) => void seen.push(decodeEnvelope(d.body).eventId));
});
afterAll(async () => {
  await observer.close();
  await transport.close();
  await pool.end();
  await Promise.all([db.drop(), bus.drop()]);
});
beforeEach(async () => {
  await db.sql`truncate event_outbox`;
  seen.length = 0;
});

const worker = () => new OutboxWorker({ service: 'cases', sql: pool, databaseUrl: db.url, transport, retention: windows, maxAttempts: 3, registry: new Registry() });
const daysAgo = (d: number) => new Date(Date.now() - d * DAY);

describe('replayEvents', () => {
  it('inside the horizon: queues the published rows created in the range again, marks them replayed, and the drain sends them again', async () => {
    await seedOutbox(db.sql, { n: 3, ageDays: 10, published: true });
    await seedOutbox(db.sql, { n: 2, ageDays: 5, published: true });
    await seedOutbox(db.sql, { n: 1, ageDays: 10 }); // pending: not a replay
    const result = await replayEvents(pool, { from: daysAgo(11), to: daysAgo(9) }, windows);
    expect(result.replayed).toBe(3);
    expect(Math.abs(Date.parse(result.horizon!) - daysAgo(30).getTime())).toBeLessThan(60_000);
    const rows = await db.sql`
      select o.replayed_at is not null as replayed, o.replay_count, q.id is not null as queued
      from event_outbox o left join event_outbox_queue q on q.id = o.id order by o.id`;
    expect(rows.map((r) => [r.replayed, r.replay_count, r.queued])).toEqual([
      [true, 1, true],
      [true, 1, true],
      [true, 1, true],
      [false, 0, false],
      [false, 0, false],
      [false, 0, true],
    ]);
    // Replaying again while they are still queued changes nothing: a pending row is not replayed.
    expect((await replayEvents(pool, { from: daysAgo(11), to: daysAgo(9) }, windows)).replayed).toBe(0);
    expect(await worker().drainOnce()).toMatchObject({ published: 4, parked: 0 });
    await eventually(() => expect(seen).toHaveLength(4));
  });

  it('outside the horizon: refused with replay_out_of_window carrying the boundary, nothing changed', async () => {
    await seedOutbox(db.sql, { n: 2, ageDays: 31, published: true });
    const from = daysAgo(31);
    const error = await replayEvents(pool, { from, to: daysAgo(1) }, windows).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ReplayOutOfWindowError);
    expect(error).toMatchObject({ code: 'replay_out_of_window', from: from.toISOString(), outboxDays: 30, inboxDays: 31 });
    expect(Math.abs(Date.parse((error as ReplayOutOfWindowError).horizon) - daysAgo(30).getTime())).toBeLessThan(60_000);
    expect(await pendingCount(db.sql)).toBe(0);
    expect((await db.sql`select count(*)::int as n from event_outbox where replayed_at is not null`)[0]!.n).toBe(0);
  });

  it('with the outbox sweep disabled the horizon is the inbox window minus a day; with both disabled there is none', async () => {
    await seedOutbox(db.sql, { n: 1, ageDays: 29.5, published: true });
    const inboxOnly = { outboxDays: 0, inboxDays: 31 };
    await expect(replayEvents(pool, { from: daysAgo(30.1), to: new Date() }, inboxOnly)).rejects.toBeInstanceOf(ReplayOutOfWindowError);
    expect((await replayEvents(pool, { from: daysAgo(29.9), to: new Date() }, inboxOnly)).replayed).toBe(1);
    await seedOutbox(db.sql, { n: 1, ageDays: 400, published: true });
    expect(await replayEvents(pool, { from: daysAgo(401), to: new Date() }, { outboxDays: 0, inboxDays: 0 })).toEqual({ replayed: 1, horizon: null });
  });

  it('refuses a range that is not one', async () => {
    await expect(replayEvents(pool, { from: daysAgo(1), to: daysAgo(2) }, windows)).rejects.toBeInstanceOf(InvalidReplayRangeError);
    await expect(replayEvents(pool, { from: 'yesterday', to: new Date() }, windows)).rejects.toMatchObject({ code: 'invalid_replay_range', from: 'yesterday' });
  });

  // Found by the HTTP fuzzer: `to` 2026-12-03 with `from` -000001-01-01T00:00:00Z reached PostgreSQL, which
  // refused the expanded year (22007), and the replay route answered 500.
  it.each([
    ['from', '-000001-01-01T00:00:00Z', 'to', new Date().toISOString()],
    ['to', '+010000-01-01T00:00:00Z', 'from', new Date(Date.now() - DAY).toISOString()],
  ])('refuses a %s of %s (outside the years 0001 to 9999) as an invalid range, not a database error', async (bound, value, other, otherValue) => {
    const range = { [bound]: value, [other]: otherValue } as { from: string; to: string };
    const refused = replayEvents(pool, range, windows);
    await expect(refused).rejects.toBeInstanceOf(InvalidReplayRangeError);
    await expect(refused).rejects.toThrow(`"${value}" is outside the years 0001 to 9999`);
  });

  it('a replayed row that is past the horizon at publish time is parked, not published, and redrive refuses it', async () => {
    await seedOutbox(db.sql, { n: 1, ageDays: 10, published: true });
    await seedOutbox(db.sql, { n: 1, ageDays: 10 }); // never delivered: past nothing, published normally
    expect((await replayEvents(pool, { from: daysAgo(11), to: daysAgo(9) }, windows)).replayed).toBe(1);
    // A long broker outage later: the replayed row now lies past the horizon (explicit past
    // timestamp instead of waiting 20 days).
    await db.sql`update event_outbox set created_at = now() - interval '31 days' where replayed_at is not null`;
    expect(await worker().drainOnce()).toMatchObject({ published: 1, parked: 1 });
    const [parked] = await db.sql`select parked_reason, last_error, exists (select 1 from event_outbox_queue q where q.id = o.id) as queued from event_outbox o where replayed_at is not null`;
    expect(parked).toMatchObject({ parked_reason: 'replay_past_horizon', queued: false });
    expect(parked!.last_error).toContain('horizon');
    await eventually(() => expect(seen).toHaveLength(1));
    expect(await redriveParked(pool, windows)).toEqual({ redriven: 0, refused: 1 });
    expect((await db.sql`select count(*)::int as n from event_outbox where parked_at is not null`)[0]!.n).toBe(1);
  });

  it('a replay holds the sweep off: a prune cycle skips while it is open, and the replayed row is never pruned', async () => {
    // 20 rows past the window, and one at the boundary: replayable when the replay checks,
    // past the window a moment later.
    await db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
      select gen_random_uuid(), 'case', g::text, 'case.opened', '{}'::jsonb, now() - interval '40 days' from generate_series(1, 20) g
      union all
      select gen_random_uuid(), 'case', 'edge', 'case.opened', '{}'::jsonb, now() - interval '30 days' + interval '1500 milliseconds'`;
    await db.sql`delete from event_outbox_queue`;
    const [edge] = await db.sql<{ created_at: Date }[]>`select created_at from event_outbox where aggregate_id = 'edge'`;
    const replayer = createClient(db.url, { service: 'replayer', max: 1 });
    try {
      await replayer.begin(async (tx) => {
        expect((await replayEvents(tx, { from: edge!.created_at, to: new Date() }, windows)).replayed).toBe(1);
        // Time moves the row past the window while the replay is still open: the cycle cannot
        // take the sweep's lock and deletes nothing.
        await eventually(async () => expect((await db.sql`select clock_timestamp() - interval '30 days' > ${edge!.created_at} as past`)[0]!.past).toBe(true), { timeoutMs: 10_000 });
        expect(await pruneTransportTables({ databaseUrl: db.url, service: 'race', retention: windows, batchSize: 100 })).toMatchObject({ skipped: true, outboxDeleted: 0 });
      });
      // Committed: the row is queued (pending), so the next cycle takes the 20 and keeps it.
      expect(await pruneTransportTables({ databaseUrl: db.url, service: 'race', retention: windows, batchSize: 100 })).toMatchObject({ skipped: false, outboxDeleted: 20 });
      const rows = await db.sql`select o.aggregate_id, q.id is not null as queued, o.replayed_at is not null as replayed from event_outbox o left join event_outbox_queue q on q.id = o.id`;
      expect(rows).toEqual([{ aggregate_id: 'edge', queued: true, replayed: true }]);
    } finally {
      await replayer.end();
    }
  });

  it('a replay waits for a prune cycle in progress, then queues its rows', async () => {
    await seedOutbox(db.sql, { n: 30, ageDays: 40, published: true });
    await seedOutbox(db.sql, { n: 2, ageDays: 10, published: true });
    let paused!: () => void;
    let resume!: () => void;
    const inCycle = new Promise<void>((r) => (paused = r));
    const gate = new Promise<void>((r) => (resume = r));
    // The cycle stops after its first batch of 10 until released.
    const prune = pruneTransportTables({ databaseUrl: db.url, service: 'race', retention: windows, batchSize: 10, adaptive: false, onBatch: async (table) => (table === 'event_outbox' ? (paused(), await gate) : undefined) });
    await inCycle;
    const replay = replayEvents(pool, { from: daysAgo(11), to: daysAgo(9) }, windows);
    await eventually(async () => expect((await db.sql`select count(*)::int as n from pg_stat_activity where application_name = 'replay-test' and wait_event = 'advisory'`)[0]!.n).toBe(1));
    expect(await pendingCount(db.sql)).toBe(0);
    resume();
    expect(await prune).toMatchObject({ skipped: false, outboxDeleted: 30 });
    expect((await replay).replayed).toBe(2);
    expect(await pendingCount(db.sql)).toBe(2);
    expect((await db.sql`select count(*)::int as n from event_outbox`)[0]!.n).toBe(2);
  });
});
