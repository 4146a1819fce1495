import { migrationTemplate } from '@craig/db';
import { MQ_MIGRATIONS, pruneTransportTables } from '@craig/mq';
import { defineServiceProfile, loadServiceSettings } from '@craig/settings';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { migrationSetsOf, registerService, serviceEntry, unregisterService } from '../services.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask prune <service>', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), max: 1 });
    registerService({ profile: defineServiceProfile({ name: 'lab', httpPort: 0 }), migrationSets: [MQ_MIGRATIONS] });
  });
  afterAll(async () => {
    unregisterService('lab');
    await db.drop();
  });
  beforeEach(async () => {
    await db.sql`truncate event_outbox, event_inbox, prune_latch`;
    await db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
      select gen_random_uuid(), 'case', g::text, 'case.opened', '{}'::jsonb, now() - interval '40 days', case when g <= 30 then now() - interval '40 days' end
      from generate_series(1, 35) g`;
    await db.sql`insert into event_inbox (consumer, event_id, event_type, received_at) select 'c', gen_random_uuid(), 'case.opened', now() - interval '40 days' from generate_series(1, 12)`;
  });

  // Only what prune uses: the database URL (and the windows' defaults). No admin token, no bus URL.
  const env = (extra: Record<string, string> = {}) => ({ CRAIG_LAB__DATABASE_URL: db.url, ...extra });
  const left = async () => (await db.sql<{ o: number; i: number }[]>`select (select count(*) from event_outbox)::int as o, (select count(*) from event_inbox)::int as i`)[0];

  it('--dry-run reports what a cycle would delete and deletes nothing', async () => {
    const out = capture();
    expect(await runXtask(['prune', 'lab', '--dry-run'], { env: env(), stdout: out })).toBe(0);
    expect(out.text()).toContain('outbox window 30 d, inbox window 31 d');
    expect(out.text()).toMatch(/event_outbox\s+would delete 30 rows/);
    expect(out.text()).toMatch(/event_inbox\s+would delete 12 rows/);
    expect(await left()).toEqual({ o: 35, i: 12 });
  });

  it('runs one cycle with the windows from the settings (published-only; 0 disables)', async () => {
    const out = capture();
    expect(await runXtask(['prune', 'lab'], { env: env({ CRAIG_LAB__EVENT_INBOX_RETENTION_DAYS: '0' }), stdout: out })).toBe(0);
    expect(out.text()).toMatch(/event_outbox\s+pruned 30 rows/);
    expect(out.text()).toMatch(/event_inbox\s+disabled/);
    expect(await left()).toEqual({ o: 5, i: 12 });
  });

  it('--json prints the run, the dry run and the resume as JSON', async () => {
    const dry = capture();
    expect(await runXtask(['prune', 'lab', '--dry-run', '--json'], { env: env(), stdout: dry })).toBe(0);
    expect(JSON.parse(dry.text())).toEqual({
      service: 'lab',
      dryRun: true,
      tables: [
        { table: 'event_outbox', windowDays: 30, disabled: false, eligible: 30, wouldDelete: 30, wouldLatch: false, latch: null },
        { table: 'event_inbox', windowDays: 31, disabled: false, eligible: 12, wouldDelete: 12, wouldLatch: false, latch: null },
      ],
    });
    const run = capture();
    expect(await runXtask(['prune', 'lab', '--json'], { env: env({ CRAIG__EVENT_INBOX_RETENTION_DAYS: '0' }), stdout: run })).toBe(0);
    expect(JSON.parse(run.text())).toEqual({
      service: 'lab',
      transport: { skipped: false, aborted: false, ms: expect.any(Number), walCompression: 'lz4' },
      tables: [
        { table: 'event_outbox', windowDays: 30, status: 'pruned', deleted: 30, batches: expect.any(Number), latch: null },
        { table: 'event_inbox', windowDays: 0, status: 'disabled', deleted: 0, batches: 0, latch: null },
      ],
    });
    expect(await left()).toEqual({ o: 5, i: 12 });
    const resume = capture();
    expect(await runXtask(['prune', 'lab', '--resume', 'event_inbox', '--json'], { env: env(), stdout: resume })).toBe(0);
    expect(JSON.parse(resume.text())).toEqual({ service: 'lab', resumed: 'event_inbox', wasLatched: false, latch: null });
  });

  it('a latched table stays latched through cycles and resumes only with --resume', async () => {
    await pruneTransportTables({ databaseUrl: db.url, service: 'lab', retention: { outboxDays: 30, inboxDays: 31 }, cap: 10, batchSize: 4 });
    expect(await left()).toEqual({ o: 25, i: 2 });
    const run = capture();
    expect(await runXtask(['prune', 'lab'], { env: env(), stdout: run })).toBe(0);
    expect(run.text()).toMatch(/event_outbox\s+LATCHED since .* pnpm xtask prune lab --resume event_outbox/);
    expect(run.text()).toMatch(/event_inbox\s+LATCHED/);
    expect(await left()).toEqual({ o: 25, i: 2 });
    const dry = capture();
    await runXtask(['prune', 'lab', '--dry-run'], { env: env(), stdout: dry });
    expect(dry.text()).toMatch(/event_outbox\s+latched since .*would delete nothing \(20 eligible\)/);

    const resumed = capture();
    expect(await runXtask(['prune', 'lab', '--resume', 'event_outbox'], { env: env(), stdout: resumed })).toBe(0);
    expect(resumed.text()).toMatch(/resumed event_outbox \(latched since .* after deleting 10 rows in one cycle, cap 10\)/);
    const again = capture();
    expect(await runXtask(['prune', 'lab'], { env: env(), stdout: again })).toBe(0);
    expect(again.text()).toMatch(/event_outbox\s+pruned 20 rows/);
    expect(again.text()).toMatch(/event_inbox\s+LATCHED/);
    expect(await left()).toEqual({ o: 5, i: 2 });
    const twice = capture();
    await runXtask(['prune', 'lab', '--resume', 'event_outbox'], { env: env(), stdout: twice });
    expect(twice.text()).toContain('event_outbox was not latched');
  });

  it('refuses a table it does not sweep, conflicting flags, and unknown services', async () => {
    const err = capture();
    expect(await runXtask(['prune', 'lab', '--resume', 'audit_log'], { env: env(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--resume takes event_outbox or event_inbox, not "audit_log"');
    expect(await runXtask(['prune', 'lab', '--resume', 'event_inbox', '--dry-run'], { env: env(), stderr: capture() })).toBe(2);
    expect(await runXtask(['prune', 'nope'], { env: env(), stderr: capture() })).toBe(2);
  });

  it('every built-in service applies the mq migration set first', () => {
    for (const name of ['cases', 'security', 'inventory', 'financial'] as const) {
      const settings = loadServiceSettings(name, {
        [`CRAIG_${name.toUpperCase()}__DATABASE_URL`]: db.url,
        [`CRAIG_${name.toUpperCase()}__ADMIN_TOKEN`]: 'x'.repeat(32),
        CRAIG__BUS_DATABASE_URL: db.url,
        CRAIG__OBJECT_STORE_BACKEND: 's3',
        CRAIG__OBJECT_STORE_BUCKET: 'archive',
      });
      expect(migrationSetsOf(serviceEntry(name)!, settings)[0]?.name).toBe('mq');
    }
  });
});
