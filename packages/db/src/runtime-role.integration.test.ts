import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropRoles, testDatabase, type TestDatabase } from '@craig/testkit';
import type { Logger } from 'pino';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RuntimeRoleError } from './errors.ts';
import { migrate, migrationTemplate, type MigrationSet } from './migrate.ts';
import { applyRuntimeGrants, defineRuntimeGrants } from './runtime-grants.ts';
import { ensureRuntimeRole } from './runtime-role.ts';
import { compressSessionWal, sessionWalCompressor, transactionWalCompression } from './wal-compression.ts';

// Roles are cluster-wide: each test names its own and drops it at the end (after the databases
// that hold its grants).
const roles: string[] = [];
const newRole = () => {
  const role = `craig_t_rt_${randomBytes(5).toString('hex')}`;
  roles.push(role);
  return role;
};

let db: TestDatabase;
let dir: string;
let set: MigrationSet;

const TABLES = `
  create table entries (id bigserial primary key, body text not null, state text not null default 'new', created_at timestamptz not null default now());
  create table ledger (id int generated always as identity primary key, note text not null);
  create table hidden (id int primary key);
  create function gate(p_id bigint) returns bigint language sql security definer set search_path = pg_catalog, pg_temp as $$ delete from public.entries where id = p_id returning id $$;
  revoke execute on function gate(bigint) from public;
`;
const grants = defineRuntimeGrants({
  tables: { entries: ['select', 'insert'], ledger: ['select', 'insert'] },
  updateColumns: { entries: ['state'] },
  functions: ['gate(bigint)'],
});

beforeAll(async () => {
  db = await testDatabase();
  dir = await mkdtemp(join(tmpdir(), 'craig-rt-'));
  await writeFile(join(dir, '000001_tables.sql'), TABLES);
  set = { name: 'lab', directory: dir, runtimeGrants: grants };
});

afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
  // Its grants went with the database; now the roles can go.
  const admin = postgres(Object.assign(new URL(db.url), { pathname: '/postgres' }).toString(), { max: 1, onnotice: () => {} });
  try {
    await dropRoles(admin, roles);
  } finally {
    await admin.end({ timeout: 1 });
  }
});

/** A connection logged in as `role` (trust auth on the test server, or the URL's password). */
const as = (role: string) => postgres(Object.assign(new URL(db.url), { username: role }).toString(), { max: 1, onnotice: () => {} });

async function sqlstate(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe('ensureRuntimeRole', () => {
  it('creates a login with no cluster-wide powers, and a second run changes nothing', async () => {
    const role = newRole();
    const first = await ensureRuntimeRole(db.sql, { role });
    expect(first).toMatchObject({ role, created: true, altered: [], revokedMemberships: [] });
    const [attrs] = await db.sql`select rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls from pg_roles where rolname = ${role}`;
    expect(attrs).toEqual({ rolcanlogin: true, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false });
    expect(await ensureRuntimeRole(db.sql, { role })).toMatchObject({ created: false, altered: [], passwordSet: false });
  });

  it('lets the role compress its own sessions\' WAL (SET wal_compression) and nothing else superuser-only; held on the next run', async () => {
    const role = newRole();
    const first = await ensureRuntimeRole(db.sql, { role });
    expect(first.parameters).toEqual([{ parameter: 'wal_compression', status: 'granted' }]);
    expect((await ensureRuntimeRole(db.sql, { role })).parameters).toEqual([{ parameter: 'wal_compression', status: 'held' }]);
    const sql = as(role);
    try {
      // A pool's transactions may set it locally; asking sets nothing.
      expect(await transactionWalCompression(sql, 'lz4')).toEqual({ method: 'lz4', setting: 'off' });
      expect(await transactionWalCompression(sql, false)).toEqual({ setting: 'off' });
      await expect(transactionWalCompression(sql, 'gzip' as 'lz4')).rejects.toThrow('wal compression method must be one of lz4, zstd, pglz: "gzip"');
      expect(await sql`select current_setting('wal_compression') as s`).toEqual([{ s: 'off' }]);
      expect(await compressSessionWal(sql, 'lz4')).toEqual({ setting: 'lz4', changed: true });
      // Another superuser parameter stays out of reach.
      expect(await sqlstate(sql`set log_statement = 'none'`)).toBe('42501');
      expect(await sqlstate(sql`set session_replication_role = 'replica'`)).toBe('42501');
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('reports the WAL-compression grant refused when the migration login may not give it, and the role still works', async () => {
    const migrator = newRole();
    const role = newRole();
    await db.sql.unsafe(`create role ${migrator} login createrole`);
    const sql = as(migrator);
    const runtime = as(role);
    try {
      const report = await ensureRuntimeRole(sql, { role });
      expect(report.created).toBe(true);
      expect(report.parameters).toHaveLength(1);
      expect(report.parameters[0]).toMatchObject({ parameter: 'wal_compression', status: 'refused' });
      expect(report.parameters[0]!.reason).toMatch(/permission denied/);
      // The sweep's session goes on with the server's setting, told why.
      const outcome = await compressSessionWal(runtime, 'lz4');
      expect(outcome).toMatchObject({ setting: 'off', changed: false });
      expect(outcome.refused).toMatch(/permission denied to set parameter "wal_compression"/);
      // A drain's transactions are told before they try, so none aborts on the SET.
      expect(await transactionWalCompression(runtime, 'lz4')).toEqual({ setting: 'off', refused: `role ${role} may not set wal_compression (no SET ON PARAMETER privilege)` });
      // A sweep's compressor says so once, naming the sweep; each compressor once.
      const warnings: Array<{ reason: string; msg: string }> = [];
      const logger = { warn: (fields: { reason: string }, msg: string) => void warnings.push({ ...fields, msg }) } as unknown as Logger;
      const [first, second] = [sessionWalCompressor('first sweep'), sessionWalCompressor('second sweep')];
      for (let cycle = 0; cycle < 3; cycle++) expect(await first(runtime, 'lz4', logger)).toMatchObject({ setting: 'off', changed: false, refused: outcome.refused });
      expect(await second(runtime, 'lz4', logger)).toMatchObject({ setting: 'off', changed: false });
      expect(warnings.map((w) => w.msg.split(':')[0])).toEqual(['first sweep', 'second sweep']);
      expect(warnings[0]).toMatchObject({ reason: outcome.refused, msg: expect.stringContaining('GRANT SET ON PARAMETER wal_compression') });
      expect(await runtime`select 1 as one`).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), runtime.end({ timeout: 1 })]);
    }
  });

  it('keeps a compression the server already has, and names a method it does not know', async () => {
    const sql = postgres(db.url, { max: 1, onnotice: () => {}, connection: { wal_compression: 'pglz' } });
    try {
      expect(await compressSessionWal(sql, 'lz4')).toEqual({ setting: 'pglz', changed: false });
      await expect(compressSessionWal(sql, 'brotli' as 'lz4')).rejects.toThrow(/"brotli"/);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('is race-safe: many databases ensuring one role at once all succeed, exactly one creates it', async () => {
    const role = newRole();
    const clients = Array.from({ length: 6 }, () => postgres(db.url, { max: 1, onnotice: () => {} }));
    try {
      const reports = await Promise.all(clients.map((c) => ensureRuntimeRole(c, { role, password: 'a-password-for-tests' })));
      expect(reports.filter((r) => r.created)).toHaveLength(1);
      // Correcting at once: several fix the same attributes concurrently.
      await db.sql.unsafe(`alter role ${role} nologin createdb`);
      const fixes = await Promise.all(clients.map((c) => ensureRuntimeRole(c, { role, password: 'x', resetPassword: true })));
      expect(fixes.every((r) => !r.created && r.passwordSet)).toBe(true);
      const [attrs] = await db.sql`select rolcanlogin, rolcreatedb from pg_roles where rolname = ${role}`;
      expect(attrs).toEqual({ rolcanlogin: true, rolcreatedb: false });
    } finally {
      await Promise.all(clients.map((c) => c.end({ timeout: 1 })));
    }
  });

  it('corrects an existing role and revokes its memberships, saying what it changed', async () => {
    const role = newRole();
    const group = newRole();
    await db.sql.unsafe(`create role ${role} nologin createrole; create role ${group} nologin; grant ${group} to ${role}`);
    const report = await ensureRuntimeRole(db.sql, { role, password: 'kept-unless-reset' });
    expect(report).toMatchObject({ created: false, altered: ['LOGIN', 'NOCREATEROLE'], passwordSet: false, revokedMemberships: [group] });
    const [member] = await db.sql`select pg_has_role(${role}, ${group}, 'MEMBER') as member`;
    expect(member!.member).toBe(false);
  });

  it('stores a SCRAM verifier, never the password', async () => {
    const role = newRole();
    await ensureRuntimeRole(db.sql, { role, password: 'plain-text-never-stored' });
    const [row] = await db.sql<{ rolpassword: string }[]>`select rolpassword from pg_authid where rolname = ${role}`;
    expect(row!.rolpassword).toMatch(/^SCRAM-SHA-256\$4096:/);
  });

  it('refuses a role name that is not a plain identifier, naming it', async () => {
    const error = await ensureRuntimeRole(db.sql, { role: 'Robert"; drop table x; --' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RuntimeRoleError);
    expect((error as RuntimeRoleError).code).toBe('runtime_role_invalid');
    expect((error as Error).message).toContain('Robert');
  });
});

describe('migrate with a runtime role', () => {
  it('grants exactly the declared privileges: serial sequences follow insert, definer gates only to the role', async () => {
    const role = newRole();
    const report = await migrate(db.url, [set], { service: 'test', runtime: { role } });
    expect(report.runtime).toMatchObject({ role: { role, created: true }, grants: { tables: 2, columns: 1, sequences: ['entries_id_seq'], functions: ['gate(bigint)'] } });
    const app = as(role);
    try {
      const [row] = await app<{ id: string }[]>`insert into entries (body) values ('a') returning id`;
      await app`update entries set state = 'seen' where id = ${row!.id}`;
      expect(await sqlstate(app`update entries set body = 'rewritten'`)).toBe('42501');
      expect(await sqlstate(app`delete from entries`)).toBe('42501');
      expect(await sqlstate(app`truncate entries`)).toBe('42501');
      expect(await sqlstate(app`alter table entries disable trigger all`)).toBe('42501');
      expect(await sqlstate(app`drop table ledger`)).toBe('42501');
      expect(await sqlstate(app`select * from hidden`)).toBe('42501');
      expect(await sqlstate(app`create table mine (id int)`)).toBe('42501');
      // The definer gate is the one way to delete, and only this role (not PUBLIC) may call it.
      const [gated] = await app<{ gate: string }[]>`select gate(${row!.id})`;
      expect(gated!.gate).toBe(row!.id);
      const [publicCan] = await db.sql`select has_function_privilege('public', 'gate(bigint)', 'EXECUTE') as can`;
      expect(publicCan!.can).toBe(false);
    } finally {
      await app.end({ timeout: 1 });
    }
  });

  it('revokes what should not be there on every run', async () => {
    const role = newRole();
    await migrate(db.url, [set], { service: 'test', runtime: { role } });
    await db.sql.unsafe(`grant all on hidden, entries to ${role}; grant truncate on ledger to ${role}`);
    await migrate(db.url, [set], { service: 'test', runtime: { role } });
    const privileges = await db.sql<{ table: string; privilege: string }[]>`
      select c.relname as table, a.privilege_type as privilege
      from pg_class c, aclexplode(c.relacl) a
      where a.grantee = ${role}::regrole and c.relnamespace = 'public'::regnamespace and c.relkind = 'r'
      order by 1, 2`;
    expect(privileges).toEqual([
      { table: 'entries', privilege: 'INSERT' },
      { table: 'entries', privilege: 'SELECT' },
      { table: 'ledger', privilege: 'INSERT' },
      { table: 'ledger', privilege: 'SELECT' },
    ]);
  });

  it('refuses a runtime role that owns anything here, and grants naming what does not exist (every one listed)', async () => {
    const role = newRole();
    await migrate(db.url, [set], { service: 'test', runtime: { role } });
    const scratch = await testDatabase();
    try {
      await db.sql.begin(async (tx) => {
        const bad = defineRuntimeGrants({ tables: { nowhere: ['select'] }, updateColumns: { entries: ['nope'] }, functions: ['missing(int)'] });
        const error = await applyRuntimeGrants(tx as never, role, bad).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RuntimeRoleError);
        expect((error as RuntimeRoleError).objects).toEqual(['table nowhere', 'column entries.nope', 'function missing(int)']);
      });
      await scratch.sql.unsafe(`create table owned_by_runtime (id int); alter table owned_by_runtime owner to ${role}`);
      const error = await scratch.sql.begin((tx) => applyRuntimeGrants(tx as never, role, grants)).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'runtime_role_owns_objects', objects: ['relation public.owned_by_runtime'] });
    } finally {
      await scratch.drop();
    }
  });

  it('is part of the template id: the same files with other grants or another role are another template', async () => {
    const plain = await migrationTemplate([set]);
    const withRole = await migrationTemplate([set], 'test', { role: 'craig_a_app' });
    const otherRole = await migrationTemplate([set], 'test', { role: 'craig_b_app' });
    const otherGrants = await migrationTemplate([{ ...set, runtimeGrants: defineRuntimeGrants({ tables: { entries: ['select'] } }) }], 'test', { role: 'craig_a_app' });
    expect(new Set([plain.id, withRole.id, otherRole.id, otherGrants.id]).size).toBe(4);
  });
});
