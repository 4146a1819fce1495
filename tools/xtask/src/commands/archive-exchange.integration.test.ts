// `pnpm xtask archive exchange` and `archive-fetch exchange` against a real exchange database:
// the built-in entry brings the service's migration sets and its three SSA specs in FK order.
import { demo, exchangeMigrationSets } from '@craig/svc-exchange';
import { loadServiceSettings } from '@craig/settings';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { migrationSetsOf, serviceEntry } from '../services.ts';
import { capture } from '../test-io.ts';

let db: TestDatabase;
let server: S3TestServer;

beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'xtask_exchange', max: 2 }), s3({ conditional: true, bucket: 'xtask-exchange' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

const envFor = () => ({
  CRAIG_EXCHANGE__DATABASE_URL: db.url,
  CRAIG_EXCHANGE__ADMIN_TOKEN: 'x'.repeat(32),
  CRAIG_EXCHANGE__BUS_DATABASE_URL: db.url,
  CRAIG_EXCHANGE__OBJECT_STORE_BACKEND: 's3',
  CRAIG_EXCHANGE__OBJECT_STORE_ENDPOINT: server.endpoint,
  CRAIG_EXCHANGE__OBJECT_STORE_BUCKET: server.bucket,
  CRAIG_EXCHANGE__OBJECT_STORE_ACCESS_KEY_ID: server.accessKeyId,
  CRAIG_EXCHANGE__OBJECT_STORE_SECRET_ACCESS_KEY: server.secretAccessKey,
  CRAIG_EXCHANGE__OBJECT_STORE_FORCE_PATH_STYLE: 'true',
});

async function xtask(argv: string[]) {
  const stdout = capture();
  const stderr = capture();
  const code = await runXtask(argv, { env: envFor(), stdout, stderr });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('the exchange service in xtask', () => {
  it('is registered with its own migration sets and its archive specs in FK deletion order', () => {
    const entry = serviceEntry('exchange')!;
    expect(entry.archive?.specs.map((s) => s.table)).toEqual(['ssa_transport_handoffs', 'ssa_screening_members', 'ssa_screening_runs']);
    expect(migrationSetsOf(entry, loadServiceSettings(entry.profile, envFor())).map((s) => s.name)).toEqual(exchangeMigrationSets().map((s) => s.name));
    expect(exchangeMigrationSets().map((s) => s.name)).toEqual(['mq', 'retention', 'exchange']);
  });

  it('pnpm xtask archive exchange archives the aged SSA chains; archive-fetch returns each row once, equal to the original', async () => {
    const migrated = await xtask(['migrate', 'exchange']);
    expect(migrated.code).toBe(0);
    await demo.seedAgedHistory(db.sql, { rows: 20 });
    const originals = await db.sql<{ id: string; run_id: string; person_ref: string; status: string }[]>`
      select id::text, run_id::text, person_ref, status from ssa_screening_members
      where created_at < now() - interval '365 days'
        and not exists (select 1 from ssa_transport_handoffs h where h.member_id = ssa_screening_members.id and h.created_at > now() - interval '365 days')
      order by ssa_screening_members.id`;
    // 20 aged cases × 2 people, plus the one guardian of the late case (its child's handoff is hot).
    expect(originals).toHaveLength(41);

    const run = await xtask(['archive', 'exchange']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/ssa_screening_members\s+41\s+1\s+/);
    expect(run.stdout).toMatch(/ssa_screening_runs\s+20\s+1\s+/);
    expect((await db.sql`select count(*)::int as n from ssa_screening_runs`)[0]!.n).toBe(3);
    expect((await db.sql`select count(*)::int as n from event_outbox`)[0]!.n).toBe(0);

    const fetched = await xtask(['archive-fetch', 'exchange', '--table', 'ssa_screening_members']);
    expect(fetched.code).toBe(0);
    const rows = fetched.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string>);
    expect(rows.map((r) => ({ id: r.id, run_id: r.run_id, person_ref: r.person_ref, status: r.status })).sort((a, b) => Number(a.id) - Number(b.id))).toEqual(originals);
    expect(new Set(rows.map((r) => r._table))).toEqual(new Set(['ssa_screening_members']));

    const verify = await xtask(['archive-fetch', 'exchange', '--verify']);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/exchange: 3 ledger entries checked, \d+ rows/);
  });
});
