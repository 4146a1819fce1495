import { createClient, migrate } from '@craig/db';
import { testDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOWED, cleanupHarness, rejection, seedItems, seedServer, type Harness } from '../test/harness.ts';
import { DatabaseNotAllowed } from './errors.ts';
import { cleanupMigrations, RUNTIME_ROLE } from './install.ts';

describe('installer guard', () => {
  it('refuses a database off the allow-list before anything is applied', async () => {
    const db = await testDatabase({ prefix: 'craig_t', max: 1 });
    try {
      const error = await rejection(migrate(db.url, [cleanupMigrations({ allowedDatabases: ALLOWED })], { service: 'test' }));
      expect(error).toBeInstanceOf(DatabaseNotAllowed);
      expect(error).toMatchObject({ code: 'database_not_allowed', database: db.name, allowed: ALLOWED });
      // Not even the migrations ledger: the guard runs before the runner writes anything.
      const [state] = await db.sql`select to_regclass('servers') as servers, to_regclass('cleanup_jobs') as jobs, to_regclass('craig_migrations') as ledger`;
      expect(state).toEqual({ servers: null, jobs: null, ledger: null });
    } finally {
      await db.drop();
    }
  });

  it('an exact entry admits only that name; a trailing * admits a prefix', async () => {
    const db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    try {
      await expect(migrate(db.url, [cleanupMigrations({ allowedDatabases: ['inventory', 'inventory_tx*'] })], { service: 'test' })).rejects.toBeInstanceOf(DatabaseNotAllowed);
      await expect(migrate(db.url, [cleanupMigrations({ allowedDatabases: [db.name] })], { service: 'test' })).resolves.toMatchObject({ alreadyApplied: 0 });
    } finally {
      await db.drop();
    }
  });

  it('installs into several databases at once: the cluster-wide role is created once and granted per database', async () => {
    const dbs = await Promise.all([0, 1, 2].map(() => testDatabase({ prefix: 'inventory_t', max: 1 })));
    try {
      await Promise.all(dbs.map((db) => migrate(db.url, [cleanupMigrations({ allowedDatabases: ALLOWED })], { service: 'test' })));
      for (const db of dbs) {
        const app = createClient(db.url, { service: 'test', max: 1, role: RUNTIME_ROLE });
        try {
          const { serverId } = await seedServer(app);
          expect(serverId).toBeGreaterThan(0);
        } finally {
          await app.end();
        }
      }
    } finally {
      await Promise.all(dbs.map((db) => db.drop()));
    }
  });
});

describe('the runtime role', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await cleanupHarness();
  });
  afterAll(() => h.drop());

  it('is not the owner and cannot switch the guards off', async () => {
    const [who] = await h.app`select current_user as role, (select tableowner from pg_tables where tablename = 'items') as owner`;
    expect(who?.role).toBe(RUNTIME_ROLE);
    expect(who?.owner).not.toBe(RUNTIME_ROLE);
    expect((await rejection(h.app`alter table items disable trigger items_admit`)).code).toBe('42501');
    expect((await rejection(h.app`set session_replication_role = replica`)).code).toBe('42501');
    expect((await rejection(h.app`truncate items`)).code).toBe('42501');
  });

  it('cannot change identity columns at all', async () => {
    const { serverId, libraryIds } = await seedServer(h.app);
    const [ext] = await seedItems(h.app, serverId, libraryIds[0]!, 1);
    expect((await rejection(h.app`update items set external_id = 'other' where external_id = ${ext!}`)).code).toBe('42501');
    expect((await rejection(h.app`update libraries set server_id = ${serverId} where id = ${libraryIds[0]!}`)).code).toBe('42501');
  });
});
