// Seed 000's test plan for the transport sweep, and the issue's additions: racing pruners,
// failing and aborted cycles, lock hygiene over many cycles, the latching cap.
import { classifyPgError, createClient, LOCK_KEYS, SessionLostError } from '@craig/db';
import { dropRoles, eventually, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { counts, seedInbox, seedOutbox, serviceDatabase, walImagesOf } from '../test/helpers.ts';
import { captureLogs, INFO, WARN } from '../test/log-capture.ts';
import { resumePrune } from './prune-latch.ts';
import { pruneTransportTables, previewTransportPrune, type PruneCycleOptions, type TransportTable } from './transport-prune.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await serviceDatabase();
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate event_outbox, event_inbox, prune_latch`;
});

const windows = { outboxDays: 30, inboxDays: 31 };
const cycle = (options: Partial<PruneCycleOptions> = {}) => pruneTransportTables({ databaseUrl: db.url, service: 'sweep-test', retention: windows, ...options });

const KEY = LOCK_KEYS.transportPrune;
/** Sessions holding the transport prune lock in this database (pg_locks splits a bigint key in two). */
async function lockHolders(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
    where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
      and classid = ${Number(KEY >> 32n)} and objid = ${Number(KEY & 0xffffffffn)} and objsubid = 1 and granted`;
  return row!.n;
}

async function outboxLeft(): Promise<{ published: number; pending: number; parked: number }> {
  const [row] = await db.sql<{ published: number; pending: number; parked: number }[]>`
    select count(*) filter (where published_at is not null)::int as published,
           count(*) filter (where published_at is null and parked_at is null)::int as pending,
           count(*) filter (where parked_at is not null)::int as parked
    from event_outbox`;
  return row!;
}

describe('transport sweep: seed 000 test plan', () => {
  it('published-only: deletes aged published rows, keeps aged pending, parked and fresh rows', async () => {
    await seedOutbox(db.sql, { n: 40, ageDays: 31, published: true });
    await seedOutbox(db.sql, { n: 7, ageDays: 31 });
    await seedOutbox(db.sql, { n: 5, ageDays: 31, parked: true });
    await seedOutbox(db.sql, { n: 3, ageDays: 2, published: true });
    const result = await cycle();
    expect(result).toMatchObject({ outboxDeleted: 40, inboxDeleted: 0, skipped: false, aborted: false });
    expect(await outboxLeft()).toEqual({ published: 3, pending: 7, parked: 5 });
  });

  it('30 d outbox window vs 31 d inbox window, each on its own boundary', async () => {
    // Outbox: 31 d and 30 d + 1 h are past its 30 d window; 29 d is not.
    await seedOutbox(db.sql, { n: 1, ageDays: 31, published: true });
    await db.sql`insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
                 values (gen_random_uuid(), 'case', 'a', 'case.opened', '{}', now() - interval '30 days 1 hour', now() - interval '30 days'),
                        (gen_random_uuid(), 'case', 'b', 'case.opened', '{}', now() - interval '29 days', now() - interval '29 days')`;
    // Inbox: 32 d is past its 31 d window; 30 d and 30 d + 1 h (past the OUTBOX window) are kept.
    await seedInbox(db.sql, 1, 32);
    await seedInbox(db.sql, 1, 30);
    await db.sql`insert into event_inbox (consumer, event_id, event_type, received_at) values ('c', gen_random_uuid(), 'case.opened', now() - interval '30 days 1 hour')`;
    expect(await cycle()).toMatchObject({ outboxDeleted: 2, inboxDeleted: 1 });
    const outbox = await db.sql`select aggregate_id from event_outbox`;
    expect(outbox.map((r) => r.aggregate_id)).toEqual(['b']);
    const [inbox] = await db.sql<{ oldest: number }[]>`select count(*)::int as n, floor(extract(epoch from now() - min(received_at)) / 86400)::int as oldest from event_inbox`;
    expect(inbox).toEqual({ n: 2, oldest: 30 });
  });

  it('deletes more than one 5,000-row batch and returns the exact count', async () => {
    await seedOutbox(db.sql, { n: 5_050, ageDays: 40, published: true });
    await seedInbox(db.sql, 5_001, 40);
    const batches: Array<[TransportTable, number]> = [];
    const result = await cycle({ onBatch: (table, b) => batches.push([table, b.deleted]) });
    expect(result).toMatchObject({ outboxDeleted: 5_050, inboxDeleted: 5_001 });
    expect(batches).toEqual([
      ['event_outbox', 5_000],
      ['event_outbox', 50],
      ['event_inbox', 5_000],
      ['event_inbox', 1],
    ]);
    expect(await counts(db.sql)).toEqual({ outbox: 0, inbox: 0 });
  });

  it('prunes the outbox before the inbox, so a cycle failing between them keeps every dedup record', async () => {
    await seedOutbox(db.sql, { n: 30, ageDays: 40, published: true });
    await seedInbox(db.sql, 30, 40);
    // Another session holds the inbox: the inbox half fails on its lock timeout.
    const blocker = createClient(db.url, { service: 'blocker', max: 1 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = blocker.begin(async (tx) => {
      await tx`lock table event_inbox in access exclusive mode`;
      locked();
      await held;
    });
    await isLocked;
    try {
      await expect(cycle({ lockTimeoutMs: 200, batchSize: 10 })).rejects.toMatchObject({ code: '55P03' });
    } finally {
      release();
      await holding;
      await blocker.end();
    }
    expect(await counts(db.sql)).toEqual({ outbox: 0, inbox: 30 });
  });

  it('a window of 0 disables that table and only that table', async () => {
    await seedOutbox(db.sql, { n: 10, ageDays: 400, published: true });
    await seedInbox(db.sql, 10, 400);
    const outboxOff = await cycle({ retention: { outboxDays: 0, inboxDays: 31 } });
    expect(outboxOff.tables.map((t) => [t.table, t.status, t.deleted])).toEqual([
      ['event_outbox', 'disabled', 0],
      ['event_inbox', 'pruned', 10],
    ]);
    expect(await counts(db.sql)).toEqual({ outbox: 10, inbox: 0 });
    await seedInbox(db.sql, 10, 400);
    const inboxOff = await cycle({ retention: { outboxDays: 30, inboxDays: 0 } });
    expect(inboxOff.tables.map((t) => [t.table, t.status, t.deleted])).toEqual([
      ['event_outbox', 'pruned', 10],
      ['event_inbox', 'disabled', 0],
    ]);
    expect(await counts(db.sql)).toEqual({ outbox: 0, inbox: 10 });
  });
});

describe('transport sweep: one pruner per database, on a session that cannot strand its lock', () => {
  it('two pruners racing: one prunes, the other skips its cycle', async () => {
    await seedOutbox(db.sql, { n: 50, ageDays: 40, published: true });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inBatch!: () => void;
    const firstBatch = new Promise<void>((r) => (inBatch = r));
    const a = cycle({
      batchSize: 10,
      onBatch: async () => {
        inBatch();
        await gate;
      },
    });
    await firstBatch;
    expect(await lockHolders()).toBe(1);
    const b = await cycle({ batchSize: 10 });
    expect(b).toMatchObject({ skipped: true, outboxDeleted: 0, inboxDeleted: 0, tables: [] });
    release();
    expect(await a).toMatchObject({ skipped: false, outboxDeleted: 50 });
    expect(await lockHolders()).toBe(0);
  });

  it('a cycle that throws midway leaves the lock free and the next cycle finishes the job', async () => {
    await seedOutbox(db.sql, { n: 50, ageDays: 40, published: true });
    let n = 0;
    await expect(
      cycle({
        batchSize: 10,
        adaptive: false,
        onBatch: () => {
          if (++n === 2) throw new Error('injected failure in batch 2');
        },
      }),
    ).rejects.toThrow('injected failure in batch 2');
    await eventually(async () => expect(await lockHolders()).toBe(0));
    expect((await counts(db.sql)).outbox).toBe(30);
    expect(await cycle({ batchSize: 10 })).toMatchObject({ skipped: false, outboxDeleted: 30 });
  });

  it('a cycle whose session is killed midway fails with SessionLostError and frees the lock', async () => {
    await seedOutbox(db.sql, { n: 50, ageDays: 40, published: true });
    const [{ pid }] = (await db.sql<{ pid: number }[]>`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    let n = 0;
    const failed = cycle({
      batchSize: 10,
      adaptive: false,
      onBatch: async () => {
        if (++n !== 2) return;
        await db.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'sweep-test:prune' and pid <> ${pid}`;
      },
    });
    // Which error surfaces depends on where the kill lands: the session's own loss signal or
    // the driver's reset of the statement in flight. Either way it is a lost connection.
    const error = await failed.then(() => undefined, (e: unknown) => e);
    expect(error instanceof SessionLostError || classifyPgError(error).kind === 'connection').toBe(true);
    await eventually(async () => expect(await lockHolders()).toBe(0));
    expect(await cycle({ batchSize: 10 })).toMatchObject({ skipped: false, outboxDeleted: 30 });
  });

  it('100 cycles in a row never strand the lock', async () => {
    for (let i = 0; i < 100; i++) {
      await seedOutbox(db.sql, { n: 1, ageDays: 40, published: true });
      const result = await cycle();
      expect([i, result.skipped, result.outboxDeleted]).toEqual([i, false, 1]);
    }
    await eventually(async () => expect(await lockHolders()).toBe(0));
  }, 120_000);

  it('an abort mid-cycle stops between batches, before the inbox, and frees the lock', async () => {
    await seedOutbox(db.sql, { n: 50, ageDays: 40, published: true });
    await seedInbox(db.sql, 20, 40);
    const controller = new AbortController();
    // Fixed batches: the abort lands after exactly two of them.
    const result = await cycle({ batchSize: 10, adaptive: false, signal: controller.signal, onBatch: (_t, b) => b.total >= 20 && controller.abort(new Error('shutdown')) });
    expect(result).toMatchObject({ aborted: true, outboxDeleted: 20, inboxDeleted: 0 });
    expect(result.tables.map((t) => [t.table, t.status])).toEqual([
      ['event_outbox', 'aborted'],
      ['event_inbox', 'not_reached'],
    ]);
    expect(await counts(db.sql)).toEqual({ outbox: 30, inbox: 20 });
    await eventually(async () => expect(await lockHolders()).toBe(0));
  });

  it('pending and parked rows survive any number of cycles', async () => {
    await seedOutbox(db.sql, { n: 20, ageDays: 400 });
    await seedOutbox(db.sql, { n: 20, ageDays: 400, parked: true });
    await seedOutbox(db.sql, { n: 100, ageDays: 400, published: true });
    for (let i = 0; i < 25; i++) await cycle({ batchSize: 7 });
    expect(await outboxLeft()).toEqual({ published: 0, pending: 20, parked: 20 });
  });
});

describe('transport sweep: the cycle cap latches until an operator resumes it', () => {
  it('stops at the cap with rows left, latches (in the database, with a warning and a gauge every cycle), and resumes only when told', async () => {
    await seedOutbox(db.sql, { n: 250, ageDays: 40, published: true });
    await seedInbox(db.sql, 5, 40);
    const registry = new Registry();
    const { logger, lines } = captureLogs();
    const run = () => cycle({ batchSize: 30, cap: 100, registry, logger });
    const latchedGauge = async () => (await registry.getSingleMetric('event_prune_cap_latched')!.get()).values.find((v) => v.labels.table === 'event_outbox')?.value;

    const first = await run();
    expect(first.tables[0]).toMatchObject({ table: 'event_outbox', status: 'capped', deleted: 100 });
    expect(first.tables[1]).toMatchObject({ table: 'event_inbox', status: 'pruned', deleted: 5 });
    expect((await counts(db.sql)).outbox).toBe(150);
    expect(await db.sql`select target, deleted::int, cap::int from prune_latch`).toEqual([{ target: 'event_outbox', deleted: 100, cap: 100 }]);
    expect(await latchedGauge()).toBe(1);

    // Latched: however many cycles run (here, on another "replica"), nothing more is deleted.
    for (let i = 0; i < 3; i++) {
      const again = await run();
      expect(again.tables[0]).toMatchObject({ table: 'event_outbox', status: 'latched', deleted: 0 });
    }
    expect((await counts(db.sql)).outbox).toBe(150);
    expect(await latchedGauge()).toBe(1);
    const warnings = lines.filter((l) => l.level === WARN && l.msg.includes('latched'));
    expect(warnings).toHaveLength(4);
    expect(warnings[3]).toMatchObject({ resume: ['pnpm xtask prune sweep-test --resume event_outbox'] });

    // Resumed: the next cycle deletes again (and, with 150 left over a cap of 100, latches again).
    expect(await resumePrune(db.sql, 'event_outbox')).toMatchObject({ target: 'event_outbox', deleted: 100, cap: 100 });
    expect((await run()).tables[0]).toMatchObject({ status: 'capped', deleted: 100 });
    await resumePrune(db.sql, 'event_outbox');
    expect((await run()).tables[0]).toMatchObject({ status: 'pruned', deleted: 50 });
    expect(await latchedGauge()).toBe(0);
    expect(await db.sql`select * from prune_latch`).toEqual([]);
    expect(await resumePrune(db.sql, 'event_outbox')).toBeUndefined();
  });

  it('reaching the cap exactly with nothing left does not latch', async () => {
    await seedOutbox(db.sql, { n: 100, ageDays: 40, published: true });
    expect((await cycle({ batchSize: 30, cap: 100 })).tables[0]).toMatchObject({ status: 'pruned', deleted: 100 });
    expect(await db.sql`select * from prune_latch`).toEqual([]);
  });

  it('a dry run reports what a cycle would delete and whether it would latch, deleting nothing', async () => {
    await seedOutbox(db.sql, { n: 120, ageDays: 40, published: true });
    await seedOutbox(db.sql, { n: 9, ageDays: 40 });
    await seedInbox(db.sql, 7, 40);
    const preview = await previewTransportPrune(db.sql, windows, 100);
    expect(preview).toEqual([
      { table: 'event_outbox', disabled: false, latch: undefined, eligible: 101, wouldDelete: 100, wouldLatch: true },
      { table: 'event_inbox', disabled: false, latch: undefined, eligible: 7, wouldDelete: 7, wouldLatch: false },
    ]);
    expect(await counts(db.sql)).toEqual({ outbox: 129, inbox: 7 });
  });
});

describe('transport sweep: observability', () => {
  it('counts rows per table, times cycles, and logs one line per cycle', async () => {
    await seedOutbox(db.sql, { n: 12, ageDays: 40, published: true });
    await seedInbox(db.sql, 4, 40);
    const registry = new Registry();
    const { logger, lines } = captureLogs();
    await cycle({ registry, logger, batchSize: 5 });
    await cycle({ registry, logger, batchSize: 5 });
    const pruned = await registry.getSingleMetric('event_rows_pruned_total')!.get();
    expect(Object.fromEntries(pruned.values.map((v) => [v.labels.table, v.value]))).toEqual({ event_outbox: 12, event_inbox: 4 });
    const seconds = await registry.getSingleMetric('event_prune_cycle_seconds')!.get();
    expect(seconds.values.find((v) => (v as { metricName?: string }).metricName === 'event_prune_cycle_seconds_count')?.value).toBe(2);
    const cycles = lines.filter((l) => l.msg.startsWith('event retention prune cycle'));
    expect(cycles).toHaveLength(2);
    expect(cycles[0]).toMatchObject({ level: INFO, outboxDeleted: 12, inboxDeleted: 4, tables: { event_outbox: 'pruned:12', event_inbox: 'pruned:4' } });
    expect(typeof cycles[0]!.ms).toBe('number');
    expect(lines).toHaveLength(2);
  });
});

describe('transport sweep: compresses the full-page images of its own deletes (ADR-069)', () => {
  /** Seed aged published rows, checkpoint (so every page the sweep changes logs a full-page image), sweep; the FPI bytes it logged for event_outbox. */
  async function sweepFpi(options: Partial<PruneCycleOptions>) {
    await seedOutbox(db.sql, { n: 5_000, ageDays: 40, published: true });
    return walImagesOf(db.sql, 'event_outbox', () => cycle(options));
  }

  it('sets lz4 on its session by default and logs each full-page image of the same deletes in well under half the bytes', async () => {
    await db.sql`create extension if not exists pg_walinspect`;
    const plain = await sweepFpi({ walCompression: false });
    const compressed = await sweepFpi({});
    expect(plain.result).toMatchObject({ outboxDeleted: 5_000, walCompression: 'off' });
    expect(compressed.result).toMatchObject({ outboxDeleted: 5_000, walCompression: 'lz4' });
    // Every heap page the sweep changed logged one image (~8 KiB uncompressed).
    expect(plain.fpi).toBeGreaterThan(40 * 8_000);
    expect(compressed.images).toBeGreaterThan(40);
    // Each image in under half the bytes (image for image: see walImagesOf).
    expect(compressed.bytesPerImage).toBeLessThan(plain.bytesPerImage * 0.5);
    expect(await counts(db.sql)).toEqual({ outbox: 0, inbox: 0 });
  });

  it('a role that may not set wal_compression sweeps uncompressed, deletes exactly the same, and warns once per process', async () => {
    const role = `craig_mq_nowal_${Math.random().toString(16).slice(2, 10)}`;
    await db.sql.unsafe(`create role ${role} login; grant select, insert, update, delete on all tables in schema public to ${role}`);
    const url = Object.assign(new URL(db.url), { username: role }).toString();
    try {
      await seedOutbox(db.sql, { n: 120, ageDays: 40, published: true });
      await seedOutbox(db.sql, { n: 30, ageDays: 40, published: false });
      await seedInbox(db.sql, 7, 40);
      const { logger, lines } = captureLogs();
      const first = await pruneTransportTables({ databaseUrl: url, service: 'sweep-test', retention: windows, logger });
      expect(first).toMatchObject({ outboxDeleted: 120, inboxDeleted: 7, walCompression: 'off' });
      expect(await outboxLeft()).toEqual({ published: 0, pending: 30, parked: 0 });
      await seedOutbox(db.sql, { n: 5, ageDays: 40, published: true });
      expect(await pruneTransportTables({ databaseUrl: url, service: 'sweep-test', retention: windows, logger })).toMatchObject({ outboxDeleted: 5, walCompression: 'off' });
      const refusals = lines.filter((l) => l.msg.includes('may not set wal_compression'));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatchObject({ level: WARN, reason: expect.stringMatching(/permission denied to set parameter "wal_compression"/) });
    } finally {
      await db.sql.unsafe(`drop owned by ${role}`);
      await dropRoles(db.sql, [role]);
    }
  });
});
