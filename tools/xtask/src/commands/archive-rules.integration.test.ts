// `pnpm xtask archive rules` and `archive-fetch rules` against a real rules database:
// the built-in entry brings the service's migration sets and archive specs.
import { demo, rulesMigrationSets } from '@craig/svc-rules';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { migrationSetsOf, serviceEntry } from '../services.ts';
import { capture } from '../test-io.ts';
import { loadServiceSettings } from '@craig/settings';

let db: TestDatabase;
let server: S3TestServer;

beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'xtask_rules', max: 2 }), s3({ conditional: true, bucket: 'xtask-rules' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

const env = {
  CRAIG_RULES__DATABASE_URL: '',
  CRAIG_RULES__ADMIN_TOKEN: 'x'.repeat(32),
  CRAIG_RULES__BUS_DATABASE_URL: '',
  CRAIG_RULES__OBJECT_STORE_BACKEND: 's3',
  CRAIG_RULES__OBJECT_STORE_ENDPOINT: '',
  CRAIG_RULES__OBJECT_STORE_BUCKET: '',
  CRAIG_RULES__OBJECT_STORE_ACCESS_KEY_ID: '',
  CRAIG_RULES__OBJECT_STORE_SECRET_ACCESS_KEY: '',
  CRAIG_RULES__OBJECT_STORE_FORCE_PATH_STYLE: 'true',
};
const envFor = () => ({
  ...env,
  CRAIG_RULES__DATABASE_URL: db.url,
  CRAIG_RULES__BUS_DATABASE_URL: db.url,
  CRAIG_RULES__OBJECT_STORE_ENDPOINT: server.endpoint,
  CRAIG_RULES__OBJECT_STORE_BUCKET: server.bucket,
  CRAIG_RULES__OBJECT_STORE_ACCESS_KEY_ID: server.accessKeyId,
  CRAIG_RULES__OBJECT_STORE_SECRET_ACCESS_KEY: server.secretAccessKey,
});

async function xtask(argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const code = await runXtask(argv, { env: envFor(), stdout, stderr });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('the rules service in xtask', () => {
  it('is registered with its own migration sets and its archive spec', () => {
    const entry = serviceEntry('rules')!;
    expect(entry.archive?.specs.map((s) => s.table)).toEqual(['rule_evaluations']);
    expect(migrationSetsOf(entry, loadServiceSettings(entry.profile, envFor())).map((s) => s.name)).toEqual(rulesMigrationSets().map((s) => s.name));
    expect(rulesMigrationSets().map((s) => s.name)).toEqual(['mq', 'retention', 'rules']);
  });

  it('pnpm xtask archive rules archives the aged evaluations of its database; archive-fetch returns each once, equal to the original; snapshots and previews stay', async () => {
    expect((await xtask(['migrate', 'rules'])).code).toBe(0);
    await demo.seedAgedHistory(db.sql, { rows: 30 });
    const originals = await db.sql<{ id: string; event_id: string; input: string; matched_rules: string }[]>`
      select id::text, event_id::text, input::text, matched_rules::text from rule_evaluations where evaluated_at < now() - interval '90 days' order by rule_evaluations.id`;
    expect(originals).toHaveLength(30);
    const hot = () => db.sql`select (select count(*)::int from rule_set_snapshots) as snapshots, (select count(*)::int from rule_set_promotion_previews) as previews`;
    const before = await hot();
    expect(before).toEqual([{ snapshots: 2, previews: 1 }]);

    const red = await xtask(['invariants', 'rules']);
    expect(red.code).toBe(1);
    expect(red.stdout).toMatch(/rule_evaluations_archive_overrun\s+RED\s+30 overdue/);

    const run = await xtask(['archive', 'rules']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/rule_evaluations\s+30\s+1\s+[\d.]+ \w+\s+drained/);
    expect((await db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n).toBe(3);
    expect(await hot()).toEqual(before);
    expect((await xtask(['invariants', 'rules'])).stdout).toMatch(/rule_evaluations_archive_overrun\s+ok/);

    const fetched = await xtask(['archive-fetch', 'rules', '--table', 'rule_evaluations']);
    expect(fetched.code).toBe(0);
    const rows = fetched.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string>);
    expect(rows.map((r) => ({ id: r.id, event_id: r.event_id, input: r.input, matched_rules: r.matched_rules })).sort((a, b) => Number(a.id) - Number(b.id))).toEqual(originals);
    expect(new Set(rows.map((r) => r._table))).toEqual(new Set(['rule_evaluations']));

    const verify = await xtask(['archive-fetch', 'rules', '--verify']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('rules: 1 ledger entries checked, 30 rows');
  });
});
