import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_KEYS, migrationTemplate, withDedicatedSession, type MigrationSet } from '@craig/db';
import { createArchiveEngine, defineArchiveSpec, fixpoints, RETENTION_MIGRATIONS } from '@craig/retention';
import { defineServiceProfile, loadSettingsParts } from '@craig/settings';
import { createObjectStore } from '@craig/store';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { registerService, unregisterService } from '../services.ts';
import { capture } from '../test-io.ts';

// A scratch service "arch-lab" whose settings point at a test database and the in-process S3
// server, with two tables registered for archiving, driven through the commands in process.
const NAME = 'arch-lab';
const profile = defineServiceProfile({ name: NAME, httpPort: 0, archive: { defaultHotWindowDays: 30, minHotWindowDays: 1 } });
const specs = [
  defineArchiveSpec({ table: 'lab_audit', keyColumn: 'id', timestampColumn: 'at', fixpoint: fixpoints.insertOnly(), batchSize: 4 }),
  defineArchiveSpec({ table: 'lab_jobs', keyColumn: 'id', timestampColumn: 'at', fixpoint: fixpoints.terminalStatus('status', ['done']) }),
];

let dir: string;
let labSet: MigrationSet;
let db: TestDatabase;
let server: S3TestServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'craig-xtask-archive-'));
  await writeFile(
    join(dir, '000001_lab.sql'),
    `create table lab_audit (id bigserial primary key, at timestamptz not null, actor text not null, detail jsonb);
     create table lab_jobs (id bigserial primary key, at timestamptz not null, status text not null);`,
  );
  labSet = { name: 'arch-lab', directory: dir };
  [db, server] = await Promise.all([testDatabase({ template: migrationTemplate([RETENTION_MIGRATIONS, labSet]), prefix: 'xtask_arch', max: 2 }), s3({ conditional: true, bucket: 'xtask-archive' })]);
  registerService({ profile, migrationSets: [RETENTION_MIGRATIONS, labSet], archive: { specs } });
});
afterAll(async () => {
  unregisterService(NAME);
  await Promise.all([db.drop(), server.stop()]);
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await db.sql`truncate lab_audit, lab_jobs`;
  await db.sql`alter table archive_ledger disable trigger user`;
  await db.sql`delete from archive_ledger`;
  await db.sql`alter table archive_ledger enable trigger user`;
});

const env = (overrides: Record<string, string> = {}) => ({
  // What archive uses: the database, the object store and the ARCHIVE_* keys. No admin token, no bus URL.
  CRAIG_ARCH_LAB__DATABASE_URL: db.url,
  CRAIG_ARCH_LAB__OBJECT_STORE_BACKEND: 's3',
  CRAIG_ARCH_LAB__OBJECT_STORE_ENDPOINT: server.endpoint,
  CRAIG_ARCH_LAB__OBJECT_STORE_BUCKET: server.bucket,
  CRAIG_ARCH_LAB__OBJECT_STORE_ACCESS_KEY_ID: server.accessKeyId,
  CRAIG_ARCH_LAB__OBJECT_STORE_SECRET_ACCESS_KEY: server.secretAccessKey,
  CRAIG_ARCH_LAB__OBJECT_STORE_FORCE_PATH_STYLE: 'true',
  CRAIG_ARCH_LAB__ARCHIVE_PREFIX: 'archive',
  ...overrides,
});

async function xtask(argv: string[], envOverrides: Record<string, string> = {}) {
  const stdout = capture();
  const stderr = capture();
  const code = await runXtask(argv, { env: env(envOverrides), stdout, stderr });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

async function seed(): Promise<void> {
  await db.sql`
    insert into lab_audit (at, actor, detail)
    select timestamptz '2024-01-01 00:00:00.000001+00' + make_interval(days => g), 'actor ' || g || E'\\nü', jsonb_build_object('big', 9007199254740993 + g)
    from generate_series(1, 10) g`;
  await db.sql`insert into lab_jobs (at, status) values ('2024-01-05+00', 'done'), ('2024-01-06+00', 'open'), (now(), 'done')`;
}

function parseNdjson(text: string): Array<Record<string, string | null>> {
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, string | null>);
}

describe('pnpm xtask archive <service>', () => {
  it('runs one cycle and prints per-table counts', async () => {
    await seed();
    const run = await xtask(['archive', NAME]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/lab_audit\s+10\s+3\s+[\d.]+ \w+\s+drained/);
    expect(run.stdout).toMatch(/lab_jobs\s+1\s+1\s+[\d.]+ \w+\s+drained/);
    expect(run.stdout).toContain('arch-lab: completed, 11 rows archived');
    // One structured log line per batch on stderr.
    expect(run.stderr.split('\n').filter((l) => l.includes('"msg":"archive batch"'))).toHaveLength(4);
    expect((await db.sql`select count(*)::int as n from lab_jobs`)[0]!.n).toBe(2);
  });

  it('--json prints the cycle report', async () => {
    await seed();
    const run = await xtask(['archive', NAME, '--json']);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { status: string; tables: Array<{ table: string; rows: number }> };
    expect(report.status).toBe('completed');
    expect(report.tables.map((t) => [t.table, t.rows])).toEqual([['lab_audit', 10], ['lab_jobs', 1]]);
  });

  it('exits 1 and keeps the rows hot when the store fails', async () => {
    await seed();
    await server.inject({ method: 'PUT', status: 403, code: 'AccessDenied', times: -1 });
    try {
      const run = await xtask(['archive', NAME]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/lab_audit\s+0\s+0\s+0 B\s+failed: .*HTTP 403 AccessDenied/);
      expect((await db.sql`select count(*)::int as n from lab_audit`)[0]!.n).toBe(10);
    } finally {
      await server.clearFaults();
    }
  });

  it('does nothing while another archiver holds the lease', async () => {
    await seed();
    const run = await withDedicatedSession(db.url, async (other) => {
      expect(await other.tryAdvisoryLock(LOCK_KEYS.archiveLease)).toBe(true);
      return xtask(['archive', NAME]);
    }, { service: 'other-archiver' });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('arch-lab: another archiver holds the lease; nothing done');
    expect((await db.sql`select count(*)::int as n from lab_audit`)[0]!.n).toBe(10);
  });

  it('refuses services it cannot archive', async () => {
    expect((await xtask(['archive', 'nope'])).stderr).toContain('unknown service "nope"');
    expect((await xtask(['archive', 'cases'])).stderr).toContain('service "cases" does not archive');
    // A service whose profile archives but which registered no specs.
    registerService({ profile: defineServiceProfile({ name: 'arch-nospecs', httpPort: 0, archive: { defaultHotWindowDays: 30, minHotWindowDays: 1 } }), migrationSets: [] });
    try {
      const unregistered = await xtask(['archive', 'arch-nospecs'], {
        CRAIG_ARCH_NOSPECS__DATABASE_URL: db.url,
        CRAIG_ARCH_NOSPECS__ADMIN_TOKEN: 'x'.repeat(32),
        CRAIG_ARCH_NOSPECS__OBJECT_STORE_BACKEND: 's3',
        CRAIG_ARCH_NOSPECS__OBJECT_STORE_BUCKET: 'b-b-b',
      });
      expect(unregistered).toMatchObject({ code: 2 });
      expect(unregistered.stderr).toContain('no archive specs are registered for service "arch-nospecs"');
    } finally {
      unregisterService('arch-nospecs');
    }
    const local = await xtask(['archive', NAME], { CRAIG_ARCH_LAB__OBJECT_STORE_BACKEND: 'local' });
    expect(local.code).toBe(1);
    expect(local.stderr).toContain('a local-filesystem backend has no timeouts');
  });
});

describe('pnpm xtask archive-fetch <service>', () => {
  it('writes every archived row once as NDJSON with _table and _archive_id, with progress on stderr', async () => {
    await seed();
    const originals = await db.sql<{ id: string; at: string; actor: string; detail: string }[]>`
      select id::text, to_char(at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as at, actor, detail::text from lab_audit order by id`;
    await xtask(['archive', NAME]);
    const out = join(dir, 'rows.ndjson');
    const run = await xtask(['archive-fetch', NAME, '--out', out]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/archive-fetch arch-lab \[#+\] 4\/4 objects\s+11 rows/);
    const rows = parseNdjson(await readFile(out, 'utf8'));
    expect(rows).toHaveLength(11);
    expect(Object.keys(rows[0]!).slice(0, 2)).toEqual(['_table', '_archive_id']);
    const audit = rows.filter((r) => r._table === 'lab_audit').sort((a, b) => Number(a.id) - Number(b.id));
    expect(audit.map(({ id, at, actor, detail }) => ({ id, at: at!.replace(/\.(\d+)\+00$/, (_m, f: string) => `.${f.padEnd(6, '0')}+00`), actor, detail }))).toEqual(originals);
    const ledger = await db.sql`select archive_id::text as id from archive_ledger`;
    expect(new Set(rows.map((r) => r._archive_id))).toEqual(new Set(ledger.map((r) => r.id)));
  });

  it('--table, --since and --until narrow the rows', async () => {
    await seed();
    await xtask(['archive', NAME]);
    const run = await xtask(['archive-fetch', NAME, '--table', 'lab_audit', '--since', '2024-01-03', '--until', '2024-01-06T00:00:00Z']);
    expect(run.code).toBe(0);
    expect(parseNdjson(run.stdout).map((r) => r.at)).toEqual(['2024-01-03 00:00:00.000001+00', '2024-01-04 00:00:00.000001+00', '2024-01-05 00:00:00.000001+00']);
    expect((await xtask(['archive-fetch', NAME, '--since', 'yesterday'])).stderr).toContain('--since "yesterday" is not an ISO 8601 date');
  });

  it('names a missing or altered object and exits non-zero; --verify reports both', async () => {
    await seed();
    await xtask(['archive', NAME]);
    const [missing, altered] = await db.sql<{ key: string }[]>`select object_key as key from archive_ledger where table_name = 'lab_audit' order by min_ts limit 2`;
    await fetch(`${server.endpoint}/${server.bucket}/${missing!.key}`, { method: 'DELETE' });
    await fetch(`${server.endpoint}/${server.bucket}/${altered!.key}`, { method: 'PUT', body: 'tampered' });

    const run = await xtask(['archive-fetch', NAME]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`error: archive object ${missing!.key}`);
    expect(run.stderr).toContain('is listed in the ledger but missing from the store');
    expect(run.stderr).toContain(`error: archive object ${altered!.key}`);
    expect(run.stderr).toMatch(/has sha256 [0-9a-f]{64}, the ledger says/);
    expect(parseNdjson(run.stdout)).toHaveLength(11 - 8); // the two 4-row objects are not written

    const verify = await xtask(['archive-fetch', NAME, '--verify']);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`FAILED ${missing!.key}: missing`);
    expect(verify.stdout).toContain(`FAILED ${altered!.key}: digest_mismatch`);
  });

  it('a crash between put and ledger leaves an orphan that --verify lists; the next cycle archives the rows again, each fetched once', async () => {
    await seed();
    const ids = (await db.sql`select id from lab_audit order by id`).map((r) => Number(r.id));
    expect(ids).toHaveLength(10);
    // Its own prefix, so the objects of earlier tests (whose ledger rows were cleared) are not listed.
    const own = { CRAIG_ARCH_LAB__ARCHIVE_PREFIX: 'crash' };
    const settings = loadSettingsParts(profile, env(own), ['archive', 'objectStore']);
    const store = createObjectStore(settings.archive!.objectStore);
    try {
      let batches = 0;
      const crashed = await createArchiveEngine({
        service: NAME,
        databaseUrl: db.url,
        store,
        specs,
        hotWindowDays: settings.archive!.hotWindowDays,
        prefix: settings.archive!.prefix,
        // The last batch, so no later batch is in flight when the process "dies".
        afterStore: async () => {
          if (++batches === 3) throw new Error('process killed after the put');
        },
      }).runCycle();
      expect(crashed.tables[0]).toMatchObject({ rows: 8, outcome: 'failed' });
    } finally {
      store.close();
    }

    const verify = await xtask(['archive-fetch', NAME, '--verify'], own);
    expect(verify.code).toBe(0);
    const orphans = verify.stdout.split('\n').filter((l) => l.startsWith('orphan crash/arch-lab/lab_audit/2024/01/'));
    expect(orphans).toHaveLength(1);
    expect(verify.stdout).toContain('0 failed, 1 orphan object');
    expect(verify.stderr).toMatch(/archive-fetch --verify arch-lab \[#+\] 3\/3 objects/);

    expect((await xtask(['archive', NAME], own)).code).toBe(0);
    const fetched = parseNdjson((await xtask(['archive-fetch', NAME, '--table', 'lab_audit'], own)).stdout);
    expect(fetched.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(ids);
    // The orphan stays an orphan (its rows live in the newer object) and is still listed.
    expect((await xtask(['archive-fetch', NAME, '--verify'], own)).stdout).toContain(orphans[0]!);
  });
});
