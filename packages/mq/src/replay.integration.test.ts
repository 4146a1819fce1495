// Replay: inside the horizon it works, outside it is refused with the boundary, a replayed row
// past the horizon at publish time is parked, and a replay racing a prune batch keeps its row.
import { createClient, type Sql } from '@craig/db';
import { eventually, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busDatabase, seedOutbox, serviceDatabase } from '../test/helpers.ts';
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
  it('inside the horizon: re-nulls published rows created in the range, marks them replayed, and the drain sends them again', async () => {
    await seedOutbox(db.sql, { n: 3, ageDays: 10, published: true });
    await seedOutbox(db.sql, { n: 2, ageDays: 5, published: true });
    await seedOutbox(db.sql, { n: 1, ageDays: 10 }); // pending: not a replay
    const result = await replayEvents(pool, { from: daysAgo(11), to: daysAgo(9) }, windows);
    expect(result.replayed).toBe(3);
    expect(Math.abs(Date.parse(result.horizon!) - daysAgo(30).getTime())).toBeLessThan(60_000);
    const rows = await db.sql`select event_id::text, replayed_at is not null as replayed, replay_count, published_at from event_outbox where created_at < now() - interval '9 days' order by id`;
    expect(rows.map((r) => [r.replayed, r.replay_count, r.published_at])).toEqual([
      [true, 1, null],
      [true, 1, null],
      [true, 1, null],
      [false, 0, null],
    ]);
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
    expect((await db.sql`select count(*)::int as n from event_outbox where published_at is null`)[0]!.n).toBe(0);
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
    const [parked] = await db.sql`select parked_reason, published_at, last_error from event_outbox where replayed_at is not null`;
    expect(parked).toMatchObject({ parked_reason: 'replay_past_horizon', published_at: null });
    expect(parked!.last_error).toContain('horizon');
    await eventually(() => expect(seen).toHaveLength(1));
    expect(await redriveParked(pool, windows)).toEqual({ redriven: 0, refused: 1 });
    expect((await db.sql`select count(*)::int as n from event_outbox where parked_at is not null`)[0]!.n).toBe(1);
  });

  it('a replay racing a prune batch keeps its row', async () => {
    // A row right at the boundary: replayable when the replay checks, prunable a moment later.
    await db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
      select gen_random_uuid(), 'case', g::text, 'case.opened', '{}'::jsonb, now() - interval '40 days', now() - interval '40 days' from generate_series(1, 20) g
      union all
      select gen_random_uuid(), 'case', 'edge', 'case.opened', '{}'::jsonb, now() - interval '30 days' + interval '1500 milliseconds', now() - interval '30 days' + interval '1600 milliseconds'`;
    const [edge] = await db.sql<{ created_at: Date }[]>`select created_at from event_outbox where aggregate_id = 'edge'`;
    const replayer = createClient(db.url, { service: 'replayer', max: 1 });
    try {
      let prune: ReturnType<typeof pruneTransportTables> | undefined;
      await replayer.begin(async (tx) => {
        // The replay passes the horizon check and re-nulls the row; its lock is held until commit.
        expect((await replayEvents(tx, { from: edge!.created_at, to: new Date() }, windows)).replayed).toBe(1);
        // Time moves the row past the window, the prune's snapshot still sees it published, and
        // its DELETE waits on the row lock.
        await eventually(async () => expect((await db.sql`select clock_timestamp() - interval '30 days' > ${edge!.created_at} as past`)[0]!.past).toBe(true), { timeoutMs: 10_000 });
        prune = pruneTransportTables({ databaseUrl: db.url, service: 'race', retention: windows, batchSize: 100 });
        await eventually(async () => expect((await db.sql`select count(*)::int as n from pg_stat_activity where application_name = 'race:prune' and wait_event_type = 'Lock'`)[0]!.n).toBe(1));
      });
      // Committed: the DELETE re-checks the whole predicate on the new row version and skips it.
      expect(await prune!).toMatchObject({ outboxDeleted: 20 });
      const rows = await db.sql`select aggregate_id, published_at, replayed_at is not null as replayed from event_outbox`;
      expect(rows).toEqual([{ aggregate_id: 'edge', published_at: null, replayed: true }]);
    } finally {
      await replayer.end();
    }
  });
});
