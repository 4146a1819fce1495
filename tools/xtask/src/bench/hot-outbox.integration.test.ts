import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, migrationTemplate, type Sql, type TransactionSql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, OutboxWorker, type Transport } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';
import { RETENTION, subscribeSink } from './bus-contender.ts';
import { outboxCopy } from './fixtures.ts';
import { hotOutboxCeiling, type BenchOutbox } from './hot-outbox.ts';

const EVENTS = 2_000;

describe("bench --outbox hot-ceiling: ADR-087's HOT outbox, measured before it is built", () => {
  let bus: TestDatabase;
  let transport: Transport;
  const dbs: TestDatabase[] = [];
  beforeAll(async () => {
    bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bench', max: 1 });
    await subscribeSink(bus.sql);
    transport = await createPostgresBusTransport({ url: bus.url, service: 'bench' });
  }, 120_000);
  afterAll(async () => {
    await transport?.close();
    for (const db of dbs) await db.drop().catch(() => {});
    await bus?.drop();
  });

  /** A copy of the bench's all-pending outbox, shipped or turned into the ceiling (its rows laid out again at fillfactor 50). */
  async function outbox(kind: BenchOutbox, rows = EVENTS): Promise<TestDatabase> {
    const db = await outboxCopy(rows, { pending: 'all' });
    dbs.push(db);
    if (kind === 'hot-ceiling') await hotOutboxCeiling(db.sql, { relayout: true });
    return db;
  }

  /** Drain everything due, two lanes, on a pool of its own; the pool is ended, so its backends flush their statistics. */
  async function drain(db: TestDatabase): Promise<number> {
    const sql = createClient(db.url, { service: 'bench-drain', max: 3 });
    try {
      const worker = new OutboxWorker({ service: 'bench', sql, databaseUrl: db.url, transport, retention: RETENTION, maxAttempts: 10, registry: new Registry(), batchSize: 500, drainLanes: 2 });
      const r = await worker.drain();
      expect(r).toMatchObject({ failed: 0, parked: 0, unavailable: 0 });
      return r.published;
    } finally {
      await sql.end();
    }
  }

  /** The table's updates and heap-only updates, once the drain's ended backends have reported at least `updates` of them. */
  async function updates(sql: Sql, atLeast: number): Promise<{ all: number; hot: number }> {
    for (let i = 0; ; i++) {
      const [row] = await sql<{ all: number; hot: number }[]>`select n_tup_upd::int as all, n_tup_hot_upd::int as hot from pg_stat_user_tables where relname = 'event_outbox'`;
      if (row!.all >= atLeast || i === 100) return row!;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const pending = async (sql: Sql) => (await sql<{ n: number }[]>`select count(*)::int as n from event_outbox where published_at is null`)[0]!.n;

  it("turns the drain's stamp into a heap-only update, which the shipped outbox's partial indexes rule out", async () => {
    const shipped = await outbox('shipped');
    const hot = await outbox('hot-ceiling');
    expect(await drain(shipped)).toBe(EVENTS);
    expect(await drain(hot)).toBe(EVENTS);
    expect(await pending(shipped.sql)).toBe(0);
    expect(await pending(hot.sql)).toBe(0);
    // Every row stamped once; on the shipped outbox no stamp is HOT, on the ceiling nearly all
    // are (a page's last rows may find it full when a lane's stamp gets there).
    expect(await updates(shipped.sql, EVENTS)).toEqual({ all: EVENTS, hot: 0 });
    const u = await updates(hot.sql, EVENTS);
    expect(u.all).toBe(EVENTS);
    expect(u.hot).toBeGreaterThan(EVENTS * 0.95);
    // No index of the ceiling names published_at: the sweep walks created_at.
    const indexes = await hot.sql<{ indexdef: string }[]>`select indexdef from pg_indexes where tablename = 'event_outbox'`;
    expect(indexes.map((i) => i.indexdef).filter((d) => d.includes('published_at'))).toEqual([]);
    expect(indexes.map((i) => i.indexdef).some((d) => d.includes('(created_at)'))).toBe(true);
  }, 120_000);

  it('is a ceiling, not a design: a row whose producer commits after a claim passed its id stays pending there, and the shipped outbox publishes it', async () => {
    const stranded: Record<BenchOutbox, number> = { shipped: -1, 'hot-ceiling': -1 };
    for (const kind of ['shipped', 'hot-ceiling'] as const) {
      const db = await outbox(kind, 10);
      await db.sql`delete from event_outbox`;
      const producer = createClient(db.url, { service: 'bench-producer', max: 2 });
      try {
        const stage = (sql: Sql | TransactionSql, n: number) => sql`insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload) values (gen_random_uuid(), 'case', ${String(n)}, 'case.opened', '{}')`;
        // The slow producer takes its id first and holds its transaction open; the fast one commits a later id.
        let commitSlow!: () => void;
        const slowHolds = new Promise<void>((resolve) => (commitSlow = resolve));
        let slowStaged!: () => void;
        const staged = new Promise<void>((resolve) => (slowStaged = resolve));
        const slow = producer.begin(async (tx) => {
          await stage(tx, 1);
          slowStaged();
          await slowHolds;
        });
        await staged;
        await stage(producer, 2);
        expect(await drain(db)).toBe(1);
        commitSlow();
        await slow;
        expect(await pending(db.sql)).toBe(1);
        await drain(db);
        stranded[kind] = await pending(db.sql);
      } finally {
        await producer.end();
      }
    }
    expect(stranded).toEqual({ shipped: 0, 'hot-ceiling': 1 });
  }, 120_000);

  it('runs bench drain on the ceiling, recording it and giving no verdict on the target', async () => {
    const root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
    try {
      const out = capture();
      const err = capture();
      expect(await runXtask(['bench', 'drain', '--transport', 'postgres', '--outbox', 'hot-ceiling', '--events', '3000', '--batch', '500', '--rounds', '1'], { root, stdout: out, stderr: err })).toBe(0);
      expect(err.text()).toContain('outbox: hot-ceiling (ADR-087), not the shipped outbox');
      expect(out.text()).toMatch(/ratio ours\/ceiling \(PostgreSQL bus\): [\d.]+ \(hot-ceiling outbox: no target\)/);
      const result = JSON.parse(await readFile(join(root, 'bench/results/drain.json'), 'utf8'));
      expect(result).toMatchObject({ outbox: 'hot-ceiling', events: 3000 });
      expect(result.postgresBus.ratio).toBeGreaterThan(0);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses an outbox it does not know, naming it', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'drain', '--outbox', 'queue'], { root: '/nonexistent', stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--outbox must be shipped or hot-ceiling: queue');
  });
});
