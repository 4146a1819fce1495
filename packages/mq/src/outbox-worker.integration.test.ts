// The worker loop: drain before prune, the per-service phase, the cadence, gauges, shutdown.
import { createClient, LOCK_KEYS, type Sql } from '@craig/db';
import { dropRoles, eventually, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busDatabase, seedOutbox, serviceDatabase, walImagesOf } from '../test/helpers.ts';
import { captureLogs, WARN } from '../test/log-capture.ts';
import { pruneJitter } from './cadence.ts';
import { OutboxWorker, spawnOutboxWorker, type OutboxWorkerOptions } from './outbox-worker.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { stageEvent } from './stage-event.ts';
import type { Transport } from './transport.ts';

let db: TestDatabase;
let bus: TestDatabase;
let pool: Sql;
let transport: Transport;
const windows = { outboxDays: 30, inboxDays: 31 };

beforeAll(async () => {
  [db, bus] = await Promise.all([serviceDatabase(2), busDatabase(1)]);
  pool = createClient(db.url, { service: 'worker-test', max: 2 });
  transport = await createPostgresBusTransport({ url: bus.url, service: 'worker-test' });
});
afterAll(async () => {
  await transport.close();
  await pool.end();
  await Promise.all([db.drop(), bus.drop()]);
});
beforeEach(async () => {
  await db.sql`truncate event_outbox, event_inbox, prune_latch`;
});

const options = (overrides: Partial<OutboxWorkerOptions> = {}): OutboxWorkerOptions => ({
  service: 'cases',
  sql: pool,
  databaseUrl: db.url,
  transport,
  retention: windows,
  maxAttempts: 3,
  registry: new Registry(),
  ...overrides,
});

const stage = (n: number) =>
  pool.begin(async (tx) => {
    for (let i = 0; i < n; i++) await stageEvent(tx, { aggregateType: 'case', aggregateId: String(i), eventType: 'case.opened', payload: { i } });
  });

describe('OutboxWorker loop', () => {
  it('drains before it prunes, and prunes once every pruneEveryTicks ticks from the service phase', async () => {
    const order: string[] = [];
    const recording: Transport = { ...transport, kind: transport.kind, maxMessageBytes: transport.maxMessageBytes, publish: (m) => (order.push(`publish ${m.length}`), transport.publish(m)) };
    const w = new OutboxWorker(options({ transport: recording, pruneEveryTicks: 4, onPruneBatch: (table, b) => void order.push(`prune ${table} ${b.deleted}`) }));
    expect(w.tickNumber).toBe(pruneJitter('cases', 4));
    await seedOutbox(db.sql, { n: 6, ageDays: 40, published: true });
    const pruneTicks: number[] = [];
    for (let i = 0; i < 8; i++) {
      const at = w.tickNumber;
      await stage(1);
      order.push(`tick ${at}`);
      const result = await w.tick();
      expect(result.published).toBe(1);
      if (result.pruned) pruneTicks.push(at);
    }
    expect(pruneTicks).toEqual([0, 0]);
    // On the due tick the staged row was published before anything was pruned.
    const due = order.indexOf('tick 0');
    expect(order.slice(due, due + 4)).toEqual(['tick 0', 'publish 1', 'prune event_outbox 6', 'prune event_inbox 0']);
    expect(order.filter((o) => o.startsWith('prune event_outbox'))).toEqual(['prune event_outbox 6', 'prune event_outbox 0']);
  });

  it('replicas of one service share a phase, other services get theirs', () => {
    const a = new OutboxWorker(options({ service: 'rules' }));
    const b = new OutboxWorker(options({ service: 'rules' }));
    const c = new OutboxWorker(options({ service: 'exchange' }));
    expect(a.tickNumber).toBe(b.tickNumber);
    expect(a.tickNumber).not.toBe(c.tickNumber);
    expect(a.tickNumber).toBe(1344);
  });

  it('a failing prune is logged and the loop goes on draining', async () => {
    const { logger, lines } = captureLogs();
    const w = new OutboxWorker(options({ databaseUrl: 'postgres://nobody@127.0.0.1:1/none', pruneEveryTicks: 1, logger }));
    await stage(2);
    const result = await w.tick();
    expect(result).toMatchObject({ published: 2, drainSkipped: false });
    expect(result.pruned).toBeUndefined();
    expect(lines.some((l) => l.level === WARN && l.msg === 'event retention prune failed')).toBe(true);
  });

  it("passes its prune's WAL compression through: lz4 by default, the server's setting with pruneWalCompression: false", async () => {
    expect(await new OutboxWorker(options({})).pruneExpired()).toMatchObject({ skipped: false, walCompression: 'lz4' });
    expect(await new OutboxWorker(options({ pruneWalCompression: false })).pruneExpired()).toMatchObject({ skipped: false, walCompression: 'off' });
  });

  it('counts prune cycles by status and stamps the last completed one, for the "prune not run" alert', async () => {
    const registry = new Registry();
    const value = async (name: string, labels: Record<string, string> = {}) =>
      (await registry.getMetricsAsJSON()).find((m) => m.name === name)?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    const before = Date.now() / 1000;
    const w = new OutboxWorker(options({ registry, pruneEveryTicks: 120, pollIntervalMs: 500 }));
    // Until the first cycle the worker's start counts as the last success; the cadence is exported.
    expect(await value('event_prune_interval_seconds')).toBe(60);
    const started = (await value('event_prune_last_success_timestamp_seconds'))!;
    expect(started).toBeGreaterThanOrEqual(before);
    await w.pruneExpired();
    expect(await value('event_prune_cycles_total', { status: 'completed' })).toBe(1);
    expect((await value('event_prune_last_success_timestamp_seconds'))!).toBeGreaterThanOrEqual(started);

    // Another pruner holds the lock: skipped, the stamp stays.
    const held = createClient(db.url, { service: 'lock-holder', max: 1 });
    try {
      await held.reserve().then(async (conn) => {
        await conn`select pg_advisory_lock(${LOCK_KEYS.transportPrune.toString()}::bigint)`;
        const stamp = await value('event_prune_last_success_timestamp_seconds');
        expect((await w.pruneExpired()).skipped).toBe(true);
        expect(await value('event_prune_cycles_total', { status: 'skipped' })).toBe(1);
        expect(await value('event_prune_last_success_timestamp_seconds')).toBe(stamp);
        await conn`select pg_advisory_unlock(${LOCK_KEYS.transportPrune.toString()}::bigint)`;
        conn.release();
      });
    } finally {
      await held.end();
    }

    // A failing cycle counts as failed (and the loop's tick logs it and goes on).
    const failing = new OutboxWorker(options({ registry, databaseUrl: 'postgres://nobody@127.0.0.1:1/none', pruneEveryTicks: 1 }));
    await failing.tick();
    expect(await value('event_prune_cycles_total', { status: 'failed' })).toBe(1);
  });

  it('keeps the pending and parked gauges current', async () => {
    const registry = new Registry();
    await seedOutbox(db.sql, { n: 3, ageDays: 1 });
    await seedOutbox(db.sql, { n: 2, ageDays: 1, parked: true });
    const w = new OutboxWorker(options({ registry }));
    expect(await w.refreshGauges()).toEqual({ pending: 3, parked: 2 });
    const value = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]!.value;
    expect([await value('event_outbox_pending'), await value('event_outbox_parked'), await value('event_dead_letters')]).toEqual([3, 2, 0]);
    await w.drainOnce();
    await w.refreshGauges();
    expect([await value('event_outbox_pending'), await value('event_outbox_parked')]).toEqual([0, 2]);
  });

  it('spawnOutboxWorker runs the loop until its signal aborts', async () => {
    const controller = new AbortController();
    const { logger, lines } = captureLogs();
    const { stopped } = spawnOutboxWorker({ ...options({ pollIntervalMs: 10, logger }), signal: controller.signal });
    await stage(3);
    await eventually(async () => expect((await db.sql`select count(*)::int as n from event_outbox where published_at is not null`)[0]!.n).toBe(3));
    controller.abort();
    await stopped;
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['outbox worker started', 'outbox worker stopped']));
  });

  it('refuses options that make no sense', () => {
    expect(() => new OutboxWorker(options({ maxAttempts: 0 }))).toThrow(RangeError);
    expect(() => new OutboxWorker(options({ batchBytes: 0 }))).toThrow(/batchBytes must be a positive integer: 0/);
    expect(() => new OutboxWorker(options({ batchSize: 10_001 }))).toThrow(/batchSize must be at most 10000: 10001/);
    expect(() => new OutboxWorker(options({ retention: { outboxDays: -1, inboxDays: 31 } }))).toThrow(/outboxDays/);
  });
});

describe('drain: compresses the full-page images of the rows it locks and stamps (ADR-086)', () => {
  /** A backlog of `n` pending rows written before a checkpoint, drained: what it published and the image bytes it logged for event_outbox. */
  async function drainFpi(overrides: Partial<OutboxWorkerOptions>, n = 5_000) {
    await seedOutbox(db.sql, { n, ageDays: 1 });
    const wal = await walImagesOf(db.sql, 'event_outbox', () => new OutboxWorker(options(overrides)).drain());
    const [left] = await db.sql<{ pending: number; published: number }[]>`
      select count(*) filter (where published_at is null)::int as pending, count(*) filter (where published_at is not null)::int as published from event_outbox`;
    await db.sql`truncate event_outbox`;
    return { ...wal, left: left! };
  }

  it('sets lz4 in each drain transaction by default, and logs each page image of the same drain in well under half the bytes', async () => {
    await db.sql`create extension if not exists pg_walinspect`;
    const plain = await drainFpi({ drainWalCompression: false });
    const compressed = await drainFpi({});
    for (const run of [plain, compressed]) {
      expect(run.result).toEqual({ claimed: 5_000, published: 5_000, failed: 0, parked: 0, unavailable: 0 });
      expect(run.left).toEqual({ pending: 0, published: 5_000 });
    }
    // Every heap page the claim locked logged one image (~8 KiB uncompressed).
    expect(plain.images).toBeGreaterThan(30);
    expect(plain.fpi).toBeGreaterThan(plain.images * 7_000);
    expect(compressed.images).toBeGreaterThan(30);
    // Each image in under half the bytes (image for image: see walImagesOf).
    expect(compressed.bytesPerImage).toBeLessThan(plain.bytesPerImage * 0.5);
  });

  it('a role that may not set wal_compression drains every row uncompressed and warns once per worker', async () => {
    await db.sql`create extension if not exists pg_walinspect`;
    const role = `craig_mq_nowal_${Math.random().toString(16).slice(2, 10)}`;
    await db.sql.unsafe(`create role ${role} login; grant select, insert, update, delete on all tables in schema public to ${role}; grant execute on function event_outbox_claim(integer, bigint, timestamptz) to ${role}`);
    const rolePool = createClient(Object.assign(new URL(db.url), { username: role }).toString(), { service: 'worker-test-nowal', max: 2 });
    try {
      const { logger, lines } = captureLogs();
      const w = new OutboxWorker(options({ sql: rolePool, logger }));
      await seedOutbox(db.sql, { n: 300, ageDays: 1 });
      expect(await w.drain()).toEqual({ claimed: 300, published: 300, failed: 0, parked: 0, unavailable: 0 });
      await seedOutbox(db.sql, { n: 20, ageDays: 1 });
      expect(await w.drainOnce()).toEqual({ claimed: 20, published: 20, failed: 0, parked: 0, unavailable: 0 });
      const [left] = await db.sql<{ pending: number }[]>`select count(*) filter (where published_at is null)::int as pending from event_outbox`;
      expect(left).toEqual({ pending: 0 });
      const refusals = lines.filter((l) => l.msg.includes('may not set wal_compression'));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatchObject({ level: WARN, reason: `role ${role} may not set wal_compression (no SET ON PARAMETER privilege)` });
      // And the same role's images go uncompressed: each as large as the superuser's with compression off.
      const uncompressed = await drainFpi({ sql: rolePool }, 2_000);
      const off = await drainFpi({ drainWalCompression: false }, 2_000);
      expect(uncompressed.result.published).toBe(2_000);
      expect(uncompressed.bytesPerImage).toBeGreaterThan(off.bytesPerImage * 0.8);
    } finally {
      await rolePool.end();
      await db.sql.unsafe(`drop owned by ${role}`);
      await dropRoles(db.sql, [role]);
    }
  });
});
