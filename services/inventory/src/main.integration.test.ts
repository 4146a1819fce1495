// main.ts as an operator runs it: a child process configured only through the environment.
import { ADMIN_TOKEN, runToExit, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);

let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

const envFor = (url: string, port: number, allowed: string) => ({
  ...serviceEnv('inventory', { databaseUrl: url, busDatabaseUrl: url, adminToken: ADMIN_TOKEN, port, runtimeRole: 'craig_inventory_runtime' }),
  CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: allowed,
});

describe('inventory main.ts', () => {
  it('installs behind the guard, serves as the runtime role, and stops in reverse order on SIGTERM', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    const port = await freePort();
    const proc = start(MAIN, { ...envFor(db.url, port, 'inventory,inventory_t*'), CRAIG_INVENTORY__EVENT_PRUNE_EVERY_TICKS: '7' });
    try {
      await waitReady(port, 20_000);
      const created = await fetch(`http://127.0.0.1:${port}/v1/servers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'srv-main', name: 'Main' }) });
      expect(created.status).toBe(201);
      // EVENT_PRUNE_EVERY_TICKS reaches the outbox worker (its start line reports the cadence).
      expect(proc.output()).toMatch(/"pruneEveryTicks":7,[^\n]*"msg":"outbox worker started"/);
      // Background work stops before the outbox worker: whatever it staged is still drained meanwhile.
      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'cleanup runner', 'outbox worker', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('refuses to install into a database off the allow-list and exits non-zero having applied nothing', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    const { code, output } = await runToExit(MAIN, envFor(db.url, await freePort(), 'inventory'));
    expect(code).toBe(1);
    expect(output).toContain('database_not_allowed');
    const [tables] = await db.sql`select to_regclass('items') as items, to_regclass('craig_migrations') as ledger`;
    expect(tables).toEqual({ items: null, ledger: null });
  });
});
