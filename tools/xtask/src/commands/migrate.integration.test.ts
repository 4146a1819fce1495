import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineRuntimeGrants } from '@craig/db';
import { defineServiceProfile } from '@craig/settings';
import postgres from 'postgres';
import { dropRoles, testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { registerService, unregisterService } from '../services.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask migrate <service>', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await testDatabase();
    dir = await mkdtemp(join(tmpdir(), 'craig-xtask-mig-'));
    await writeFile(join(dir, '000001_widgets.sql'), 'create table widgets (id int primary key);');
    registerService({
      profile: defineServiceProfile({ name: 'lab', httpPort: 0 }),
      migrationSets: [{ name: 'lab', directory: dir, runtimeGrants: defineRuntimeGrants({ tables: { widgets: ['select', 'insert'] } }) }],
    });
  });
  afterAll(async () => {
    unregisterService('lab');
    await db.drop();
    // The role's grants went with the database; the cluster-wide role goes too.
    const admin = postgres(Object.assign(new URL(db.url), { pathname: '/postgres' }).toString(), { max: 1, onnotice: () => {} });
    await dropRoles(admin, ['craig_lab_app']).finally(() => admin.end({ timeout: 1 }));
    await rm(dir, { recursive: true, force: true });
  });

  // Only what migrate uses: the database URL. No admin token, no bus URL.
  const env = () => ({ CRAIG_LAB__DATABASE_URL: db.url });

  it("applies the service's migrations to the database its settings name", async () => {
    const stdout = capture();
    expect(await runXtask(['migrate', 'lab'], { env: env(), stdout })).toBe(0);
    expect(stdout.text()).toContain('applied lab/000001_widgets');
    expect((await db.sql`select to_regclass('widgets')::text as t`)[0]?.t).toBe('widgets');
    const again = capture();
    expect(await runXtask(['migrate', 'lab'], { env: env(), stdout: again })).toBe(0);
    expect(again.text()).toContain('0 applied, 1 already applied');
  });

  it('creates and grants the runtime login role, revokes what it should not hold, and is re-runnable', async () => {
    const runtimeUrl = Object.assign(new URL(db.url), { username: 'craig_lab_app', password: 'a-runtime-password' }).toString();
    const twoLogins = { ...env(), CRAIG_LAB__DATABASE_URL: runtimeUrl, CRAIG_LAB__MIGRATION_DATABASE_URL: db.url };
    const stdout = capture();
    expect(await runXtask(['migrate', 'lab'], { env: twoLogins, stdout })).toBe(0);
    expect(stdout.text()).toMatch(/lab: runtime role craig_lab_app \((created|exists)[^)]*password set\): 1 tables/);
    expect(stdout.text()).toMatch(/everything else revoked; SET wal_compression (granted|held)\n/);
    await db.sql`grant delete, truncate on widgets to craig_lab_app`;
    expect(await runXtask(['migrate', 'lab'], { env: twoLogins, stdout: capture() })).toBe(0);
    const [privileges] = await db.sql`
      select has_table_privilege('craig_lab_app', 'widgets', 'SELECT') as can_select, has_table_privilege('craig_lab_app', 'widgets', 'INSERT') as can_insert,
             has_table_privilege('craig_lab_app', 'widgets', 'DELETE') as can_delete, has_table_privilege('craig_lab_app', 'widgets', 'TRUNCATE') as can_truncate`;
    expect(privileges).toEqual({ can_select: true, can_insert: true, can_delete: false, can_truncate: false });
    // The role logs in (trust auth on the test server) and is refused what it was not granted.
    const app = postgres(runtimeUrl, { max: 1, onnotice: () => {} });
    try {
      await app`insert into widgets values (1)`;
      await expect(app`delete from widgets`).rejects.toMatchObject({ code: '42501' });
    } finally {
      await app.end({ timeout: 1 });
    }
  });

  it('fails with the settings problems when the environment is wrong', async () => {
    const stderr = capture();
    expect(await runXtask(['migrate', 'lab'], { env: { ...env(), CRAIG_LAB__DATABASE_URL: 'mysql://nope' }, stderr })).toBe(1);
    expect(stderr.text()).toContain('CRAIG_LAB__DATABASE_URL="mysql://nope"');
  });

  it('refuses an unknown service and a missing argument with usage', async () => {
    const stderr = capture();
    expect(await runXtask(['migrate', 'nope'], { env: env(), stderr })).toBe(2);
    expect(stderr.text()).toContain('unknown service "nope"');
    expect(await runXtask(['migrate'], { env: env(), stderr: capture() })).toBe(2);
  });
});

describe('pnpm xtask', () => {
  it('lists the commands with --help and explains one with <command> --help', async () => {
    const out = capture();
    expect(await runXtask(['--help'], { stdout: out })).toBe(0);
    expect(out.text()).toMatch(/migrate\s+apply a service's migrations/);
    const usage = capture();
    expect(await runXtask(['migrate', '--help'], { stdout: usage })).toBe(0);
    expect(usage.text()).toContain('pnpm xtask migrate <service>');
  });

  it('rejects an unknown command', async () => {
    const err = capture();
    expect(await runXtask(['migrat'], { stderr: err })).toBe(2);
    expect(err.text()).toContain('unknown command "migrat"');
  });

  it('docs --check agrees with the committed docs/config.md', async () => {
    const out = capture();
    expect(await runXtask(['docs', '--check'], { stdout: out, stderr: out })).toBe(0);
  });
});
