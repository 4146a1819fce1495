// The built-in financial entry: its local sweep of settled subsidy_reconcile_queue rows is run,
// previewed and resumed by `pnpm xtask prune financial`, and its invariant is checked by
// `pnpm xtask invariants financial`, in process against a scratch database.
import { migrationTemplate } from '@craig/db';
import { financialMigrationSets, sweepSettledReconcileRows } from '@craig/svc-financial';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase({ template: migrationTemplate(financialMigrationSets()), prefix: 'xtask_fin', max: 1 });
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate subsidy_reconcile_queue, subsidy_import_lines, subsidy_imports, prune_latch`;
});

const env = (extra: Record<string, string> = {}) => ({ CRAIG_FINANCIAL__DATABASE_URL: db.url, CRAIG_FINANCIAL__ADMIN_TOKEN: 'x'.repeat(32), CRAIG__BUS_DATABASE_URL: db.url, ...extra });

/** Settled rows `ageDays` after settlement, and pending ones of the same age (never swept). */
async function seed(settled: number, ageDays: number, pending = 0): Promise<void> {
  const [imp] = await db.sql<{ id: string }[]>`
    insert into subsidy_imports (source, period, status, row_count, matched_count, completed_at)
    values ('seed-' || gen_random_uuid(), date_trunc('month', now())::date, 'completed', 0, 0, now()) returning id::text`;
  await db.sql`
    insert into subsidy_reconcile_queue (event_id, placement_id, kind, amount, status, import_id, enqueued_at, matched_at, settled_at)
    select gen_random_uuid(), 'p-' || g, 'placement_ended', 1, 'settled', ${imp!.id}::bigint,
           now() - make_interval(days => ${ageDays} + 2), now() - make_interval(days => ${ageDays} + 1), now() - make_interval(days => ${ageDays}, secs => g)
    from generate_series(1, ${settled}) g`;
  await db.sql`
    insert into subsidy_reconcile_queue (event_id, placement_id, kind, enqueued_at)
    select gen_random_uuid(), 'q-' || g, 'placement_started', now() - make_interval(days => ${ageDays}) from generate_series(1, ${pending}) g`;
}

const left = async () => (await db.sql<{ settled: number; pending: number }[]>`
  select count(*) filter (where status = 'settled')::int as settled, count(*) filter (where status = 'pending')::int as pending from subsidy_reconcile_queue`)[0];

async function xtask(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = capture();
  const err = capture();
  const code = await runXtask(argv, { env: env(), stdout: out, stderr: err });
  return { code, out: out.text(), err: err.text() };
}

describe('pnpm xtask prune financial', () => {
  it('runs the settled reconcile sweep after the transport cycle, with the window from the settings', async () => {
    await seed(6, 100, 3);
    await seed(2, 10);
    const dry = await xtask('prune', 'financial', '--dry-run');
    expect(dry.out).toContain('subsidy_reconcile_queue window 90 d');
    expect(dry.out).toMatch(/subsidy_reconcile_queue\s+would delete 6 rows/);
    expect(await left()).toEqual({ settled: 8, pending: 3 });
    const run = await xtask('prune', 'financial');
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/event_outbox\s+pruned 0 rows/);
    expect(run.out).toMatch(/subsidy_reconcile_queue\s+pruned 6 rows in 1 batches \(window 90 d\)/);
    expect(await left()).toEqual({ settled: 2, pending: 3 });
    const off = capture();
    await runXtask(['prune', 'financial'], { env: env({ CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: '0' }), stdout: off });
    expect(off.text()).toMatch(/subsidy_reconcile_queue\s+disabled \(window 0\)/);
  });

  it('a capped sweep stays latched through cycles and resumes with --resume subsidy_reconcile_queue', async () => {
    await seed(25, 120);
    expect(await sweepSettledReconcileRows({ databaseUrl: db.url, service: 'financial', retentionDays: 90, cap: 10, batchSize: 4 })).toMatchObject({ status: 'capped', deleted: 10 });
    for (let cycle = 0; cycle < 2; cycle++) {
      const run = await xtask('prune', 'financial');
      expect(run.out).toMatch(/subsidy_reconcile_queue\s+LATCHED since .* pnpm xtask prune financial --resume subsidy_reconcile_queue/);
    }
    expect(await left()).toEqual({ settled: 15, pending: 0 });
    const dry = await xtask('prune', 'financial', '--dry-run');
    expect(dry.out).toMatch(/subsidy_reconcile_queue\s+latched since .*would delete nothing \(15 eligible\)/);
    const invariants = await xtask('invariants', 'financial');
    expect(invariants.code).toBe(1);
    expect(invariants.out).toMatch(/prune_latch\s+RED\s+subsidy_reconcile_queue latched since/);

    const resumed = await xtask('prune', 'financial', '--resume', 'subsidy_reconcile_queue');
    expect(resumed.code).toBe(0);
    expect(resumed.out).toMatch(/resumed subsidy_reconcile_queue \(latched since .* after deleting 10 rows in one cycle, cap 10\)/);
    const again = await xtask('prune', 'financial');
    expect(again.out).toMatch(/subsidy_reconcile_queue\s+pruned 15 rows/);
    expect(await left()).toEqual({ settled: 0, pending: 0 });
    expect((await xtask('prune', 'financial', '--resume', 'subsidy_reconcile_queue')).out).toContain('subsidy_reconcile_queue was not latched');
  });

  it('--resume names every target it takes when given another', async () => {
    const bad = await xtask('prune', 'financial', '--resume', 'subsidy_imports');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--resume takes event_outbox, event_inbox or subsidy_reconcile_queue, not "subsidy_imports"');
  });
});

describe('pnpm xtask invariants financial', () => {
  it('subsidy_reconcile_queue_retention_overrun is red on overdue settled rows and green after a sweep', async () => {
    await seed(4, 95, 5);
    await seed(3, 91);
    const red = await xtask('invariants', 'financial', '--json');
    expect(red.code).toBe(1);
    const report = JSON.parse(red.out) as { invariants: Array<{ name: string; ok: boolean; rows: number }> };
    expect(report.invariants.find((i) => i.name === 'subsidy_reconcile_queue_retention_overrun')).toMatchObject({ ok: false, rows: 4 });
    await xtask('prune', 'financial');
    const green = await xtask('invariants', 'financial');
    expect(green.code).toBe(0);
    expect(green.out).toMatch(/subsidy_reconcile_queue_retention_overrun\s+ok/);
    expect(await left()).toEqual({ settled: 0, pending: 5 });
  });
});
