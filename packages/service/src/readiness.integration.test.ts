import { createServer, type Server, type Socket } from 'node:net';
import { createClient, type Sql } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from './app.ts';

// A database that accepts connections and then never says a word: the readiness probe must
// answer promptly, naming the check that hung, while the other checks still report.
let silent: Server;
const sockets: Socket[] = [];
let stalled: Sql;
let db: TestDatabase;

beforeAll(async () => {
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  stalled = createClient(`postgres://postgres@127.0.0.1:${port}/none`, { service: 'readiness-test', max: 1 });
  db = await testDatabase({ prefix: 'craig_readyz' });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await stalled.end({ timeout: 0 });
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  await db.drop();
});

describe('/readyz', () => {
  it('counts a check that never answers as failed after the timeout, beside the checks that answered', async () => {
    const app = createHttpApp({
      service: 'cases',
      logger: pino({ level: 'silent' }),
      registry: new Registry(),
      adminToken: 'a-long-enough-admin-token-0123456789',
      readinessTimeoutMs: 300,
      readiness: [
        { name: 'database', check: async () => void (await db.sql`select 1`) },
        { name: 'silent database', check: async () => void (await stalled`select 1`) },
      ],
    });
    try {
      const started = performance.now();
      const res = await app.inject('/readyz');
      const ms = performance.now() - started;
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        status: 'not_ready',
        service: 'cases',
        checks: [
          { name: 'database', ok: true },
          { name: 'silent database', ok: false, error: 'did not answer within 300 ms' },
        ],
      });
      // The silent server did get the connection: the check really was waiting on it.
      expect(sockets.length).toBeGreaterThanOrEqual(1);
      expect(ms).toBeGreaterThanOrEqual(290);
      expect(ms).toBeLessThan(5000);
    } finally {
      await app.close();
    }
  });

  it('refuses a timeout that is not a positive number, naming it', () => {
    for (const bad of [0, -1, Number.NaN]) {
      expect(() => createHttpApp({ service: 'cases', logger: pino({ level: 'silent' }), registry: new Registry(), adminToken: 'a-long-enough-admin-token-0123456789', readinessTimeoutMs: bad })).toThrow(`readinessTimeoutMs must be a positive number of milliseconds: ${bad}`);
    }
  });
});
