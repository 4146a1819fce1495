// main.ts as an operator runs it: a child process configured only through the environment.
import { ADMIN_TOKEN, runToExit, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { eventually, freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);
const dbs: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(dbs.splice(0).map((d) => d.drop()));
});

describe('cases main.ts', () => {
  it('migrates, serves, publishes a write through the outbox, and stops in reverse order on SIGTERM', async () => {
    const [db, bus] = await Promise.all([testDatabase({ prefix: 'cases_t', max: 1 }), testDatabase({ max: 1 })]);
    dbs.push(db, bus);
    const port = await freePort();
    const proc = start(MAIN, serviceEnv('cases', { databaseUrl: db.url, busDatabaseUrl: bus.url, adminToken: ADMIN_TOKEN, port, runtimeRole: 'craig_cases_app' }));
    try {
      await waitReady(port, 20_000);
      const res = await fetch(`http://127.0.0.1:${port}/v1/cases`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ subject: 'from main' }) });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      // The worker (one tick a second) publishes it to the bus database the settings name.
      await eventually(async () => {
        const [row] = await db.sql`select published_at is not null as published from event_outbox where aggregate_id = ${id}`;
        expect(row).toEqual({ published: true });
      }, { timeoutMs: 15_000 });
      const [applied] = await bus.sql`select count(*)::int as n from craig_migrations where migration_set = 'bus'`;
      expect(applied!.n).toBeGreaterThan(0);
      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'outbox worker', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('a fatal start error (the bus database is missing) is logged, what started is stopped, and it exits 1', async () => {
    const db = await testDatabase({ prefix: 'cases_t', max: 1 });
    dbs.push(db);
    const missingBus = db.url.replace(/\/[^/?]+(\?|$)/, '/craig_no_such_bus$1');
    const { code, output, stopped } = await runToExit(MAIN, { CRAIG_CASES__DATABASE_URL: db.url, CRAIG_CASES__BUS_DATABASE_URL: missingBus, CRAIG_CASES__ADMIN_TOKEN: 'an-admin-token-for-tests-0123456789', CRAIG_CASES__HTTP_PORT: String(await freePort()) });
    expect(code).toBe(1);
    expect(output).toContain('cases service failed to start');
    expect(output).toContain('craig_no_such_bus');
    // Its own sets were applied before the bus was tried; nothing else had started.
    const [row] = await db.sql`select count(*)::int as n from craig_migrations where migration_set = 'cases'`;
    expect(row!.n).toBe(1);
    expect(stopped).toEqual([]);
  });

  it('refuses bad settings at once, naming the variable, and exits 1', async () => {
    const { code, output } = await runToExit(MAIN, { CRAIG_CASES__DATABASE_URL: 'postgres://127.0.0.1/x', CRAIG_CASES__ADMIN_TOKEN: 'an-admin-token-for-tests-0123456789', CRAIG_CASES__HTTP_PORT: 'eighty' });
    expect(code).toBe(1);
    expect(output).toContain('CRAIG_CASES__HTTP_PORT');
    expect(output).toContain('"level":60');
  });
});
