// The service-local terminal-state sweep of settled subsidy_reconcile_queue rows (ADR-058
// class 1): settled-only, the window on the database's clock, exact batching, one sweeper per
// database, the latching cap, 0 disables, and the report-only invariant.
import { LOCK_KEYS, migrationTemplate } from '@craig/db';
import { readPruneLatches, resumePrune, retentionOverrun } from '@craig/mq';
import { eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { metricValue, seedQueue } from '../test/harness.ts';
import { financialMigrationSets } from './migrations.ts';
import { reconcileRetentionSpecs, RECONCILE_SWEEP_TARGET, sweepSettledReconcileRows, type SweepOptions } from './reconcile-sweep.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase({ template: migrationTemplate(financialMigrationSets()), prefix: 'financial_sweep', max: 2 });
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate subsidy_reconcile_queue, subsidy_import_lines, subsidy_imports, prune_latch`;
});

const sweep = (options: Partial<SweepOptions> = {}) => sweepSettledReconcileRows({ databaseUrl: db.url, service: 'financial', retentionDays: 90, ...options });

async function byStatus(): Promise<Record<string, number>> {
  const rows = await db.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from subsidy_reconcile_queue group by status order by status`;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

const lockHolders = async () =>
  (await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
    where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
      and ((classid::bigint << 32) | objid::bigint) = ${LOCK_KEYS.financialReconcileSweep.toString()}::bigint`)[0]!.n;

describe('settled reconcile sweep', () => {
  it('deletes only settled rows past the window: pending and matched of any age, and settled inside the window, survive', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 7, ageDays: 91 });
    await seedQueue(db.sql, { status: 'settled', count: 3, ageDays: 2000 });
    await seedQueue(db.sql, { status: 'settled', count: 4, ageDays: 89 });
    await seedQueue(db.sql, { status: 'pending', count: 5, ageDays: 3000 });
    await seedQueue(db.sql, { status: 'matched', count: 6, ageDays: 3000 });
    const registry = new Registry();
    const result = await sweep({ registry });
    expect(result).toMatchObject({ status: 'pruned', deleted: 10, batches: 1 });
    expect(await byStatus()).toEqual({ matched: 6, pending: 5, settled: 4 });
    const [youngest] = await db.sql<{ ok: boolean }[]>`select bool_and(settled_at > now() - interval '90 days') as ok from subsidy_reconcile_queue where status = 'settled'`;
    expect(youngest!.ok).toBe(true);
    expect(await metricValue(registry, 'event_rows_pruned_total', { table: 'subsidy_reconcile_queue' })).toBe(10);
    expect(await lockHolders()).toBe(0);
  });

  it('counts exactly across batches (batch size injected) and stops on the short batch', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 23, ageDays: 100 });
    await seedQueue(db.sql, { status: 'settled', count: 2, ageDays: 10 });
    const batches: number[] = [];
    const result = await sweep({ batchSize: 5, onBatch: (b) => batches.push(b.deleted) });
    expect(result).toMatchObject({ status: 'pruned', deleted: 23, batches: 5 });
    expect(batches).toEqual([5, 5, 5, 5, 3]);
    expect(await byStatus()).toEqual({ settled: 2 });
  });

  it('0 disables the sweep: nothing is touched, not even the lock', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 4, ageDays: 500 });
    expect(await sweep({ retentionDays: 0 })).toMatchObject({ status: 'disabled', deleted: 0 });
    expect(await byStatus()).toEqual({ settled: 4 });
    // The invariant of a disabled sweep holds trivially.
    expect((await retentionOverrun(db.sql, reconcileRetentionSpecs(0)[0]!)).ok).toBe(true);
  });

  it('the window is whole days on the database clock: a shorter window takes the younger rows too', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 3, ageDays: 20 });
    await seedQueue(db.sql, { status: 'settled', count: 2, ageDays: 5 });
    expect(await sweep({ retentionDays: 30 })).toMatchObject({ deleted: 0 });
    expect(await sweep({ retentionDays: 10 })).toMatchObject({ deleted: 3 });
    expect(await byStatus()).toEqual({ settled: 2 });
  });

  it('two sweepers racing: one sweeps, the other skips while the lock is held', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 30, ageDays: 120 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inBatch!: () => void;
    const firstBatch = new Promise<void>((r) => (inBatch = r));
    const a = sweep({
      batchSize: 10,
      onBatch: async () => {
        inBatch();
        await gate;
      },
    });
    await firstBatch;
    expect(await lockHolders()).toBe(1);
    expect(await sweep({ batchSize: 10 })).toMatchObject({ status: 'skipped', deleted: 0, batches: 0 });
    release();
    expect(await a).toMatchObject({ status: 'pruned', deleted: 30 });
    expect(await lockHolders()).toBe(0);
  });

  it('the transport prune lock does not fence it: distinct keys', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 2, ageDays: 120 });
    const [held] = await db.sql<{ ok: boolean }[]>`select pg_try_advisory_lock(${LOCK_KEYS.transportPrune.toString()}::bigint) as ok`;
    try {
      expect(held!.ok).toBe(true);
      expect(await sweep()).toMatchObject({ status: 'pruned', deleted: 2 });
    } finally {
      await db.sql`select pg_advisory_unlock_all()`;
    }
  });

  it('the cap latches, stays latched across cycles, and deletes again only once resumed', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 25, ageDays: 120 });
    const registry = new Registry();
    const capped = await sweep({ cap: 10, batchSize: 4, registry });
    expect(capped).toMatchObject({ status: 'capped', deleted: 10 });
    expect(capped.latch).toMatchObject({ target: RECONCILE_SWEEP_TARGET, deleted: 10, cap: 10 });
    expect(await metricValue(registry, 'event_prune_cap_latched', { table: 'subsidy_reconcile_queue' })).toBe(1);
    expect(await byStatus()).toEqual({ settled: 15 });
    for (let cycle = 0; cycle < 2; cycle++) {
      expect(await sweep({ cap: 10, batchSize: 4, registry })).toMatchObject({ status: 'latched', deleted: 0, latch: { deleted: 10, cap: 10 } });
    }
    expect(await byStatus()).toEqual({ settled: 15 });
    expect([...(await readPruneLatches(db.sql)).keys()]).toEqual([RECONCILE_SWEEP_TARGET]);
    expect(await resumePrune(db.sql, RECONCILE_SWEEP_TARGET)).toMatchObject({ deleted: 10 });
    expect(await sweep({ cap: 100, batchSize: 4, registry })).toMatchObject({ status: 'pruned', deleted: 15 });
    expect(await metricValue(registry, 'event_prune_cap_latched', { table: 'subsidy_reconcile_queue' })).toBe(0);
    expect(await metricValue(registry, 'event_rows_pruned_total', { table: 'subsidy_reconcile_queue' })).toBe(25);
  });

  it('exactly the cap with nothing left does not latch', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 8, ageDays: 120 });
    expect(await sweep({ cap: 8, batchSize: 4 })).toMatchObject({ status: 'pruned', deleted: 8 });
    expect((await readPruneLatches(db.sql)).size).toBe(0);
  });

  it('aborts between batches and leaves the lock free', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 20, ageDays: 120 });
    const controller = new AbortController();
    const result = await sweep({ batchSize: 5, signal: controller.signal, onBatch: () => controller.abort() });
    expect(result).toMatchObject({ status: 'aborted', deleted: 5 });
    expect(await byStatus()).toEqual({ settled: 15 });
    // An aborted session is destroyed, not unlocked: the server frees the lock as its backend exits.
    await eventually(async () => expect(await lockHolders()).toBe(0));
  });

  it('the invariant is red on overdue settled rows (window + 48 h) and green after a sweep', async () => {
    const [spec] = reconcileRetentionSpecs(90);
    await seedQueue(db.sql, { status: 'settled', count: 3, ageDays: 93 });
    // Past the window but inside the grace: not yet overdue. Pending rows of any age never are.
    await seedQueue(db.sql, { status: 'settled', count: 2, ageDays: 91 });
    await seedQueue(db.sql, { status: 'pending', count: 4, ageDays: 400 });
    const red = await retentionOverrun(db.sql, spec!);
    expect(red).toMatchObject({ name: 'subsidy_reconcile_queue_retention_overrun', ok: false, overdueRows: 3 });
    expect(red.oldest).toBeInstanceOf(Date);
    expect(await sweep()).toMatchObject({ deleted: 5 });
    expect(await retentionOverrun(db.sql, spec!)).toMatchObject({ ok: true, overdueRows: 0, oldest: null });
  });
});

describe('settled is terminal', () => {
  it('the database refuses any update of a settled row; the designed updates never touch one', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 1, ageDays: 1 });
    await expect(db.sql`update subsidy_reconcile_queue set amount = 1`).rejects.toMatchObject({ constraint_name: 'subsidy_reconcile_queue_settled_is_terminal' });
    await expect(db.sql`update subsidy_reconcile_queue set status = 'pending', settled_at = null, matched_at = null, import_id = null, amount = null`).rejects.toThrow(/is settled/);
    // The schema's checks: settled ⇔ settled_at, and settled_at never before enqueued_at.
    await expect(db.sql`
      insert into subsidy_reconcile_queue (event_id, placement_id, kind, status, settled_at)
      values (gen_random_uuid(), 'p', 'placement_started', 'pending', now())`).rejects.toMatchObject({ code: '23514' });
    await expect(db.sql`
      insert into subsidy_reconcile_queue (event_id, placement_id, kind, amount, status, import_id, enqueued_at, matched_at, settled_at)
      select gen_random_uuid(), 'p', 'placement_started', 1, 'settled', id, now(), now(), now() - interval '1 day' from subsidy_imports limit 1`).rejects.toMatchObject({ code: '23514' });
    expect(await byStatus()).toEqual({ settled: 1 });
  });
});
