// main.ts as an operator runs it: a child process configured only through the environment.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually, freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

const envFor = (url: string, port: number, allowed: string) => ({
  CRAIG_INVENTORY__DATABASE_URL: url,
  CRAIG_INVENTORY__BUS_DATABASE_URL: url,
  CRAIG_INVENTORY__ADMIN_TOKEN: 'an-admin-token-for-tests',
  CRAIG_INVENTORY__HTTP_PORT: String(port),
  CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: allowed,
});

describe('inventory main.ts', () => {
  it('installs behind the guard, serves as the runtime role, and stops in reverse order on SIGTERM', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    const port = await freePort();
    const proc = start({ ...envFor(db.url, port, 'inventory,inventory_t*'), CRAIG_INVENTORY__EVENT_PRUNE_EVERY_TICKS: '7' });
    try {
      await eventually(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        expect(res.status).toBe(200);
      }, { timeoutMs: 20_000 });
      const created = await fetch(`http://127.0.0.1:${port}/v1/servers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'srv-main', name: 'Main' }) });
      expect(created.status).toBe(201);
      // EVENT_PRUNE_EVERY_TICKS reaches the outbox worker (its start line reports the cadence).
      expect(proc.output()).toMatch(/"pruneEveryTicks":7,[^\n]*"msg":"outbox worker started"/);
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
      // By each line's own time, not arrival order: under load the child's last log lines can
      // reach the pipe out of order (the timestamps are still right).
      const stopped = proc
        .output()
        .split('\n')
        .flatMap((line) => {
          if (!line.startsWith('{') || !line.endsWith('}')) return [];
          const entry = JSON.parse(line) as { msg?: string; step?: string; time?: string };
          return entry.msg === 'stopped' && entry.step ? [{ step: entry.step, at: Date.parse(entry.time ?? '') }] : [];
        })
        .sort((a, b) => a.at - b.at)
        .map((e) => e.step);
      // Background work stops before the outbox worker: whatever it staged is still drained meanwhile.
      expect(stopped).toEqual(['http', 'cleanup runner', 'outbox worker', 'transport', 'database pool']);
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('refuses to install into a database off the allow-list and exits non-zero having applied nothing', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    const proc = start(envFor(db.url, await freePort(), 'inventory'));
    try {
      expect(await proc.exited).toBe(1);
      expect(proc.output()).toContain('database_not_allowed');
      const [tables] = await db.sql`select to_regclass('items') as items, to_regclass('craig_migrations') as ledger`;
      expect(tables).toEqual({ items: null, ledger: null });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });
});
