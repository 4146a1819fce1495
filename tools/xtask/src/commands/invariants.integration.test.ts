import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrationTemplate, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS, latchPrune, pruneTransportTables } from '@craig/mq';
import { defineArchiveSpec, fixpoints, RETENTION_MIGRATIONS } from '@craig/retention';
import { defineServiceProfile } from '@craig/settings';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { registerService, unregisterService } from '../services.ts';
import { capture } from '../test-io.ts';

// A scratch archiving service "inv-lab": transport tables, the archive ledger and one audit
// table registered for archiving, checked through the command in process.
const NAME = 'inv-lab';
const specs = [defineArchiveSpec({ table: 'lab_audit', keyColumn: 'id', timestampColumn: 'at', fixpoint: fixpoints.terminalStatus('status', ['done']) })];

let dir: string;
let db: TestDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'craig-xtask-invariants-'));
  await writeFile(join(dir, '000001_lab.sql'), `create table lab_audit (id bigserial primary key, at timestamptz not null, status text not null);`);
  const labSet: MigrationSet = { name: 'inv-lab', directory: dir };
  db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS, RETENTION_MIGRATIONS, labSet]), prefix: 'xtask_inv', max: 2 });
  registerService({
    profile: defineServiceProfile({ name: NAME, httpPort: 0, archive: { defaultHotWindowDays: 30, minHotWindowDays: 1 } }),
    migrationSets: [MQ_MIGRATIONS, RETENTION_MIGRATIONS, labSet],
    archive: { specs },
  });
});
afterAll(async () => {
  unregisterService(NAME);
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await db.sql`truncate event_outbox, event_inbox, prune_latch, lab_audit, dedup_horizon_observations`;
});

const env = {
  CRAIG_INV_LAB__DATABASE_URL: '',
  CRAIG_INV_LAB__ADMIN_TOKEN: 'x'.repeat(32),
  CRAIG_INV_LAB__OBJECT_STORE_BACKEND: 's3',
  CRAIG_INV_LAB__OBJECT_STORE_ENDPOINT: 'http://127.0.0.1:1',
  CRAIG_INV_LAB__OBJECT_STORE_BUCKET: 'unused',
  CRAIG_INV_LAB__OBJECT_STORE_ACCESS_KEY_ID: 'k',
  CRAIG_INV_LAB__OBJECT_STORE_SECRET_ACCESS_KEY: 's',
};

async function invariants(...argv: string[]) {
  const stdout = capture();
  const code = await runXtask(['invariants', NAME, ...argv], { env: { ...env, CRAIG_INV_LAB__DATABASE_URL: db.url, CRAIG__BUS_DATABASE_URL: db.url }, stdout, stderr: capture() });
  return { code, text: stdout.text() };
}

async function seedOverdue(): Promise<void> {
  // 33 days: past the 30-day outbox window + 48 h; 34 days: past the 31-day inbox window + 48 h.
  await db.sql`
    insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
    select gen_random_uuid(), 'case', g::text, 'case.opened', '{}'::jsonb, now() - interval '33 days', case when g <= 5 then now() - interval '33 days' end
    from generate_series(1, 8) g`;
  await db.sql`insert into event_inbox (consumer, event_id, event_type, received_at) select 'c', gen_random_uuid(), 'case.opened', now() - interval '34 days' from generate_series(1, 6)`;
}

describe('pnpm xtask invariants <service>', () => {
  it('is green on a swept database', async () => {
    await db.sql`insert into lab_audit (at, status) values (now() - interval '40 days', 'open'), (now() - interval '1 day', 'done')`;
    const { code, text } = await invariants();
    expect(text).toMatch(/event_outbox_retention_overrun\s+ok/);
    expect(text).toMatch(/lab_audit_archive_overrun\s+ok/);
    expect(text).toContain('inv-lab: every invariant holds');
    expect(code).toBe(0);
  });

  it('turns red on overdue rows (pending rows never count), and green again after a prune cycle', async () => {
    await seedOverdue();
    const red = await invariants('--json');
    expect(red.code).toBe(1);
    const report = JSON.parse(red.text) as { ok: boolean; invariants: Array<{ name: string; ok: boolean; rows: number }> };
    expect(report.ok).toBe(false);
    expect(report.invariants.filter((i) => !i.ok).map((i) => [i.name, i.rows])).toEqual([
      ['event_outbox_retention_overrun', 5],
      ['event_inbox_retention_overrun', 6],
    ]);
    await pruneTransportTables({ databaseUrl: db.url, service: NAME, retention: { outboxDays: 30, inboxDays: 31 } });
    expect((await invariants()).code).toBe(0);
  });

  it('a latched sweep and a parked row are red, each naming what to do', async () => {
    await latchPrune(db.sql, 'event_outbox', { deleted: 1_000_000, cap: 1_000_000 });
    await db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, parked_at, parked_reason)
      values (gen_random_uuid(), 'case', '1', 'case.opened', '{}'::jsonb, now(), 'max_attempts')`;
    const { code, text } = await invariants();
    expect(code).toBe(1);
    expect(text).toMatch(/prune_latch\s+RED\s+.*pnpm xtask prune inv-lab --resume event_outbox/);
    expect(text).toMatch(/event_outbox_parked\s+RED\s+.*1 parked rows/);
    expect(text).toContain('inv-lab: 2 invariant(s) red');
  });

  it('archivable rows past the hot window + grace are red, rows off the fixpoint never count, the hot window comes from the settings', async () => {
    await db.sql`insert into lab_audit (at, status) select now() - interval '40 days', case when g <= 3 then 'done' else 'open' end from generate_series(1, 5) g`;
    const { code, text } = await invariants();
    expect(code).toBe(1);
    expect(text).toMatch(/lab_audit_archive_overrun\s+RED\s+3 overdue/);
    // The hot window comes from the settings: a longer one makes the same rows hot.
    const stdout = capture();
    expect(await runXtask(['invariants', NAME], { env: { ...env, CRAIG_INV_LAB__DATABASE_URL: db.url, CRAIG__BUS_DATABASE_URL: db.url, CRAIG_INV_LAB__ARCHIVE_HOT_WINDOW_DAYS: '60' }, stdout, stderr: capture() })).toBe(0);
  });

  it('the dedup horizon is red while a consumer last saw a producer replaying past its inbox window, naming both variables and values', async () => {
    await db.sql`
      insert into dedup_horizon_observations (consumer, producer, producer_outbox_days, producer_inbox_days, consumer_inbox_days, violated, observed_at)
      values ('inv-lab.cases', 'cases', 45, 46, 31, true, now() - interval '10 minutes'), ('inv-lab.rules', 'rules', 30, 31, 31, false, now())`;
    const red = await invariants('--json');
    expect(red.code).toBe(1);
    const report = JSON.parse(red.text) as { invariants: Array<{ name: string; ok: boolean; rows: number; detail: string }> };
    const horizon = report.invariants.find((i) => i.name === 'dedup_horizon')!;
    expect(horizon).toMatchObject({ ok: false, rows: 1 });
    expect(horizon.detail).toContain('inv-lab.cases saw cases with CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=45 against CRAIG_INV_LAB__EVENT_INBOX_RETENTION_DAYS=31');
    expect(horizon.detail).toContain('pnpm xtask fleet check');
    // The consumer records a compliant delivery from cases at once: green again.
    await db.sql`update dedup_horizon_observations set producer_outbox_days = 30, violated = false where producer = 'cases'`;
    const green = await invariants();
    expect(green.code).toBe(0);
    expect(green.text).toMatch(/dedup_horizon\s+ok\s+every producer seen keeps within the inbox window \(cases, rules\)/);
  });

  it('needs only the database URL and the windows: no admin token, bus URL or object store', async () => {
    const stdout = capture();
    const stderr = capture();
    expect(await runXtask(['invariants', NAME], { env: { CRAIG_INV_LAB__DATABASE_URL: db.url }, stdout, stderr })).toBe(0);
    expect(stdout.text()).toContain('inv-lab: every invariant holds');
    // A typo is still refused, though the command does not use that part.
    expect(await runXtask(['invariants', NAME], { env: { CRAIG_INV_LAB__DATABASE_URL: db.url, CRAIG_INV_LAB__ADMIN_TOKN: 'x' }, stdout: capture(), stderr })).toBe(1);
    expect(stderr.text()).toContain('did you mean CRAIG_INV_LAB__ADMIN_TOKEN?');
  });

  it('refuses an unknown service by name', async () => {
    const stderr = capture();
    expect(await runXtask(['invariants', 'nope'], { env: {}, stdout: capture(), stderr })).not.toBe(0);
    expect(stderr.text()).toContain('unknown service "nope"');
  });
});
