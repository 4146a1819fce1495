// `pnpm xtask archive security` and `archive-fetch security` against a real security database:
// the built-in entry brings the service's migration sets and archive specs.
import { demo, securityMigrationSets } from '@craig/svc-security';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { migrationSetsOf, serviceEntry } from '../services.ts';
import { capture } from '../test-io.ts';
import { loadServiceSettings } from '@craig/settings';

let db: TestDatabase;
let server: S3TestServer;

beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'xtask_security', max: 2 }), s3({ conditional: true, bucket: 'xtask-security' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

const env = {
  CRAIG_SECURITY__DATABASE_URL: '',
  CRAIG_SECURITY__ADMIN_TOKEN: 'x'.repeat(32),
  CRAIG_SECURITY__BUS_DATABASE_URL: '',
  CRAIG_SECURITY__OBJECT_STORE_BACKEND: 's3',
  CRAIG_SECURITY__OBJECT_STORE_ENDPOINT: '',
  CRAIG_SECURITY__OBJECT_STORE_BUCKET: '',
  CRAIG_SECURITY__OBJECT_STORE_ACCESS_KEY_ID: '',
  CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY: '',
  CRAIG_SECURITY__OBJECT_STORE_FORCE_PATH_STYLE: 'true',
};
const envFor = () => ({
  ...env,
  CRAIG_SECURITY__DATABASE_URL: db.url,
  CRAIG_SECURITY__BUS_DATABASE_URL: db.url,
  CRAIG_SECURITY__OBJECT_STORE_ENDPOINT: server.endpoint,
  CRAIG_SECURITY__OBJECT_STORE_BUCKET: server.bucket,
  CRAIG_SECURITY__OBJECT_STORE_ACCESS_KEY_ID: server.accessKeyId,
  CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY: server.secretAccessKey,
});

async function xtask(argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const code = await runXtask(argv, { env: envFor(), stdout, stderr });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('the security service in xtask', () => {
  it('is registered with its own migration sets and its archive specs', () => {
    const entry = serviceEntry('security')!;
    expect(entry.archive?.specs.map((s) => s.table)).toEqual(['audit_log', 'dead_letter_audit']);
    expect(migrationSetsOf(entry, loadServiceSettings(entry.profile, envFor())).map((s) => s.name)).toEqual(securityMigrationSets().map((s) => s.name));
  });

  it('pnpm xtask archive security archives the aged rows of its database; archive-fetch returns each once, equal to the original', async () => {
    expect((await xtask(['migrate', 'security'])).code).toBe(0);
    await demo.seedAgedHistory(db.sql, { rows: 30 });
    const originals = await db.sql<{ id: string; event_id: string; payload: string }[]>`
      select id::text, event_id::text, payload::text from audit_log where received_at < now() - interval '90 days' order by audit_log.id`;
    expect(originals).toHaveLength(30);

    const run = await xtask(['archive', 'security']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/audit_log\s+30\s+1\s+[\d.]+ \w+\s+drained/);
    expect(run.stdout).toMatch(/dead_letter_audit\s+1\s+1\s+/);
    expect((await db.sql`select count(*)::int as n from audit_log`)[0]!.n).toBe(3);

    const fetched = await xtask(['archive-fetch', 'security', '--table', 'audit_log']);
    expect(fetched.code).toBe(0);
    const rows = fetched.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string>);
    expect(rows.map((r) => ({ id: r.id, event_id: r.event_id, payload: r.payload })).sort((a, b) => Number(a.id) - Number(b.id))).toEqual(originals);
    expect(new Set(rows.map((r) => r._table))).toEqual(new Set(['audit_log']));

    const verify = await xtask(['archive-fetch', 'security', '--verify']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('security: 2 ledger entries checked, 31 rows');
  });
});
