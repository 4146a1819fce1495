import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MigrationError } from './errors.ts';
import { migrate, type MigrationSet } from './migrate.ts';

let db: TestDatabase;
let dirs: string[] = [];

beforeEach(async () => {
  db = await testDatabase();
});
afterEach(async () => {
  await db.drop();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  dirs = [];
});

async function set(name: string, files: Record<string, string>): Promise<MigrationSet> {
  const dir = await mkdtemp(join(tmpdir(), `craig-mig-${name}-`));
  dirs.push(dir);
  for (const [file, sql] of Object.entries(files)) await writeFile(join(dir, file), sql);
  return { name, directory: dir };
}

const applied = async () =>
  (await db.sql<{ migration_set: string; version: string; name: string }[]>`select migration_set, version::text, name from craig_migrations order by applied_at, migration_set, version`).map(
    (r) => `${r.migration_set}/${r.version}/${r.name}`,
  );

async function refusal(p: Promise<unknown>): Promise<MigrationError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(MigrationError);
    return error as MigrationError;
  }
  throw new Error('expected a MigrationError');
}

describe('migrate', () => {
  it('applies sets in the declared order, files by version, and records (set, version)', async () => {
    const mq = await set('mq', { '000001_outbox.sql': 'create table outbox (id int primary key);', '000002_inbox.sql': 'create table inbox (id int);' });
    const svc = await set('cases', { '000001_cases.sql': 'create table cases (id int references outbox (id) deferrable);' });
    // Equal version numbers in different sets coexist.
    const report = await migrate(db.url, [mq, svc], { service: 'test' });
    expect(report.applied.map((a) => `${a.set}/${a.version}`)).toEqual(['mq/1', 'mq/2', 'cases/1']);
    expect(await applied()).toEqual(['mq/1/outbox', 'mq/2/inbox', 'cases/1/cases']);
    const again = await migrate(db.url, [mq, svc], { service: 'test' });
    expect(again).toEqual({ applied: [], alreadyApplied: 3 });
  });

  it('runs each file in one transaction: a failing file leaves nothing behind', async () => {
    const bad = await set('bad', { '000001_ok.sql': 'create table a (id int);', '000002_broken.sql': 'create table b (id int); insert into nowhere values (1);' });
    const error = await refusal(migrate(db.url, [bad], { service: 'test' }));
    expect(error.code).toBe('migration_failed');
    expect(error.set).toBe('bad');
    expect(error.file).toBe('000002_broken.sql');
    expect(await applied()).toEqual(['bad/1/ok']);
    const [b] = await db.sql`select to_regclass('b') as t`;
    expect(b?.t).toBeNull();
  });

  it('refuses to start when an applied migration was edited, naming the set and file', async () => {
    const s = await set('rules', { '000001_a.sql': 'create table a (id int);' });
    await migrate(db.url, [s], { service: 'test' });
    await writeFile(join(s.directory as string, '000001_a.sql'), 'create table a (id bigint);');
    await writeFile(join(s.directory as string, '000002_b.sql'), 'create table b (id int);');
    const error = await refusal(migrate(db.url, [s], { service: 'test' }));
    expect(error.code).toBe('migration_checksum_mismatch');
    expect(error.set).toBe('rules');
    expect(error.file).toBe('000001_a.sql');
    expect(error.message).toContain('rules/000001_a.sql');
    // Nothing else ran: the refusal happens before any pending file.
    expect(await applied()).toEqual(['rules/1/a']);
  });

  it('refuses when an applied migration file disappeared', async () => {
    const s = await set('x', { '000001_a.sql': 'select 1;', '000002_b.sql': 'select 2;' });
    await migrate(db.url, [s], { service: 'test' });
    await rm(join(s.directory as string, '000002_b.sql'));
    expect((await refusal(migrate(db.url, [s], { service: 'test' }))).code).toBe('migration_missing');
  });

  it('refuses a new file older than an applied one (forward-only)', async () => {
    const s = await set('x', { '000002_b.sql': 'select 2;' });
    await migrate(db.url, [s], { service: 'test' });
    await writeFile(join(s.directory as string, '000001_a.sql'), 'select 1;');
    const error = await refusal(migrate(db.url, [s], { service: 'test' }));
    expect(error.code).toBe('migration_out_of_order');
    expect(error.file).toBe('000001_a.sql');
  });

  it('refuses badly named files, duplicate versions and a set declared twice', async () => {
    expect((await refusal(migrate(db.url, [await set('x', { '1_a.sql': 'select 1;' })], { service: 'test' }))).code).toBe('migration_invalid');
    const twins = await set('y', { '000001_a.sql': 'select 1;', '000001_b.sql': 'select 2;' });
    expect((await refusal(migrate(db.url, [twins], { service: 'test' }))).message).toContain('same version');
    const s = await set('z', { '000001_a.sql': 'select 1;' });
    expect((await refusal(migrate(db.url, [s, s], { service: 'test' }))).message).toContain('declared twice');
  });

  it('two concurrent migrators apply each file exactly once', async () => {
    // Not idempotent on purpose: a second run of either file would fail or double the count.
    const s = await set('race', {
      '000001_table.sql': 'create table runs (n int); insert into runs values (1); select pg_sleep(0.2);',
      '000002_more.sql': 'insert into runs values (2); create table only_once (id int);',
    });
    const results = await Promise.all([migrate(db.url, [s], { service: 'a' }), migrate(db.url, [s], { service: 'b' }), migrate(db.url, [s], { service: 'c' })]);
    expect(results.map((r) => r.applied.length).sort()).toEqual([0, 0, 2]);
    expect((await db.sql`select n from runs order by n`).map((r) => r.n)).toEqual([1, 2]);
    expect(await applied()).toEqual(['race/1/table', 'race/2/more']);
  });

  it("runs every set's preflight before anything is applied; a refusal applies nothing and is rethrown as is", async () => {
    class NotHere extends Error {
      readonly code = 'not_here';
    }
    const seen: string[] = [];
    const open = await set('open', { '000001_a.sql': 'create table a (id int);' });
    const guarded: MigrationSet = {
      ...(await set('guarded', { '000001_b.sql': 'create table b (id int);' })),
      preflight: async ({ sql, database }) => {
        const [row] = await sql<{ locked: boolean }[]>`select count(*) > 0 as locked from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()`;
        seen.push(`${database}:${row!.locked}`);
        if (database === db.name) throw new NotHere(`not into ${database}`);
      },
    };
    await expect(migrate(db.url, [open, guarded], { service: 'test' })).rejects.toBeInstanceOf(NotHere);
    // It ran under the migrator lock, on the target database, and the earlier set was not applied either.
    expect(seen).toEqual([`${db.name}:true`]);
    const [t] = await db.sql`select to_regclass('a') as a, to_regclass('b') as b`;
    expect(t).toEqual({ a: null, b: null });
  });
});

describe('createClient({ role })', () => {
  it('runs the session as that role', async () => {
    const { createClient } = await import('./client.ts');
    const sql = createClient(db.url, { service: 'test', max: 1, role: 'pg_monitor' });
    try {
      const [who] = await sql`select current_user as cur, session_user as ses`;
      expect(who?.cur).toBe('pg_monitor');
      expect(who?.ses).not.toBe('pg_monitor');
    } finally {
      await sql.end();
    }
  });
});
