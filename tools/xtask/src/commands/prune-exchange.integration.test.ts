// The built-in exchange entry: its local sweep of finished send jobs is run, previewed and
// resumed by `pnpm xtask prune exchange`, and its invariant is checked by `pnpm xtask
// invariants exchange`, in process against a scratch database.
import { migrationTemplate } from '@craig/db';
import { exchangeMigrationSets, sweepSendJobs } from '@craig/svc-exchange';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase({ template: migrationTemplate(exchangeMigrationSets()), prefix: 'xtask_exch', max: 1 });
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate exchange_send_jobs, prune_latch`;
  // Seven finished 40+ days ago (past 30 d + 48 h), two live ones of any age: never swept.
  await db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
    select 'old-' || g, 'ssa-gateway', (array['sent', 'failed', 'cancelled'])[1 + g % 3], 1, now() - interval '50 days', now() - make_interval(days => 40, secs => g)
    from generate_series(1, 7) g`;
  await db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at)
    values ('live-1', 'ssa-gateway', 'queued', 0, now() - interval '400 days'), ('live-2', 'ssa-gateway', 'sending', 1, now() - interval '400 days')`;
});

const env = { CRAIG_EXCHANGE__ADMIN_TOKEN: 'x'.repeat(32), CRAIG_EXCHANGE__OBJECT_STORE_BACKEND: 's3', CRAIG_EXCHANGE__OBJECT_STORE_BUCKET: 'unused' };
const left = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from exchange_send_jobs`)[0]!.n;

async function xtask(...argv: string[]): Promise<{ code: number; out: string }> {
  const out = capture();
  const code = await runXtask(argv, { env: { ...env, CRAIG_EXCHANGE__DATABASE_URL: db.url, CRAIG__BUS_DATABASE_URL: db.url }, stdout: out, stderr: capture() });
  return { code, out: out.text() };
}

describe('pnpm xtask prune exchange / invariants exchange', () => {
  it('previews and runs the send-job sweep after the transport cycle; the invariant goes red to green', async () => {
    const red = await xtask('invariants', 'exchange');
    expect(red.code).toBe(1);
    expect(red.out).toMatch(/exchange_send_jobs_retention_overrun\s+RED\s+7 overdue/);
    expect((await xtask('prune', 'exchange', '--dry-run')).out).toMatch(/exchange_send_jobs\s+would delete 7 rows/);
    expect(await left()).toBe(9);
    const run = await xtask('prune', 'exchange');
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/exchange_send_jobs\s+pruned 7 rows/);
    expect(await left()).toBe(2);
    expect((await xtask('invariants', 'exchange')).code).toBe(0);
  });

  it('a latched sweep deletes nothing until --resume exchange_send_jobs', async () => {
    const capped = await sweepSendJobs({ databaseUrl: db.url, retentionDays: 30, batchSize: 2, cap: 3 });
    expect(capped).toMatchObject({ status: 'capped', deleted: 3 });
    const latched = await xtask('prune', 'exchange');
    expect(latched.out).toMatch(/exchange_send_jobs\s+LATCHED/);
    expect(await left()).toBe(6);
    const resumed = await xtask('prune', 'exchange', '--resume', 'exchange_send_jobs');
    expect(resumed.code).toBe(0);
    expect(resumed.out).toContain('resumed exchange_send_jobs');
    await xtask('prune', 'exchange');
    expect(await left()).toBe(2);
  });
});
