// The sweep's timer loop: cycles on its cadence, stops on abort, and the admin trigger refuses while another sweeper holds the lock.
import { LOCK_KEYS, migrationTemplate, withDedicatedSession } from '@craig/db';
import { eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, seedQueue } from '../test/harness.ts';
import { SweepLockHeldError } from './errors.ts';
import { financialMigrationSets } from './migrations.ts';
import { SWEEP_EVERY_MS, SweepRunner } from './sweep-runner.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase({ template: migrationTemplate(financialMigrationSets()), prefix: 'financial_runner', max: 2 });
});
afterAll(() => db.drop());

describe('SweepRunner', () => {
  it('is hourly by default', () => {
    expect(SWEEP_EVERY_MS).toBe(3_600_000);
  });

  it('sweeps on its timer until aborted', async () => {
    await seedQueue(db.sql, { status: 'settled', count: 12, ageDays: 200 });
    const registry = new Registry();
    const runner = new SweepRunner({ databaseUrl: db.url, service: 'financial', retentionDays: 90, registry, batchSize: 5, initialDelayMs: 0, everyMs: 50 });
    const controller = new AbortController();
    const stopped = runner.run(controller.signal);
    await eventually(async () => expect(await metricValue(registry, 'local_sweep_cycles_total', { sweep: 'subsidy_reconcile_queue', status: 'pruned', trigger: 'timer' })).toBeGreaterThanOrEqual(2));
    controller.abort();
    await stopped;
    expect((await db.sql`select count(*)::int as n from subsidy_reconcile_queue where status = 'settled'`)[0]!.n).toBe(0);
    expect(await metricValue(registry, 'event_rows_pruned_total', { table: 'subsidy_reconcile_queue' })).toBe(12);
  });

  it("keeps the transport sweep's cadence (EVENT_PRUNE_EVERY_TICKS) when given its ticks", async () => {
    await seedQueue(db.sql, { status: 'settled', count: 3, ageDays: 200 });
    const registry = new Registry();
    // Two 1 s ticks: the first cycle within 2 s (a phase in [0, 2)), the next 2 s later; the
    // hourly default would run none in this test.
    const runner = new SweepRunner({ databaseUrl: db.url, service: 'financial', retentionDays: 90, registry, everyTicks: 2 });
    const controller = new AbortController();
    const started = performance.now();
    const stopped = runner.run(controller.signal);
    const cycles = () => metricValue(registry, 'local_sweep_cycles_total', { sweep: 'subsidy_reconcile_queue', status: 'pruned', trigger: 'timer' });
    await eventually(async () => expect(await cycles()).toBeGreaterThanOrEqual(2), { timeoutMs: 8_000 });
    const elapsed = performance.now() - started;
    controller.abort();
    await stopped;
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect((await db.sql`select count(*)::int as n from subsidy_reconcile_queue where status = 'settled'`)[0]!.n).toBe(0);
  });

  it('runNow throws sweep_lock_held while another session holds the lock', async () => {
    const runner = new SweepRunner({ databaseUrl: db.url, service: 'financial', retentionDays: 90, registry: new Registry() });
    await withDedicatedSession(
      db.url,
      async (session) => {
        expect(await session.tryAdvisoryLock(LOCK_KEYS.financialReconcileSweep)).toBe(true);
        const error = await runner.runNow().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(SweepLockHeldError);
        expect(error).toMatchObject({ code: 'sweep_lock_held', retryable: true });
      },
      { service: 'financial-test' },
    );
    expect(await runner.runNow()).toMatchObject({ status: 'pruned', deleted: 0 });
  });
});
