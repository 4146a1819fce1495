// main.ts as an operator runs it: a child process configured only through the environment,
// against a fresh database, the bus in that database, and the in-process S3 server.
import { objectStoreEnv, runToExit, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { eventually, freePort, s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);
const TOKEN = 'an-admin-token-for-tests-0123456789';

let db: TestDatabase;
let server: S3TestServer;
beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'security_main', max: 1 }), s3({ conditional: true, bucket: 'security-main' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

describe('security main.ts', () => {
  it('migrates, serves, audits events, archives on demand, and stops in reverse order on SIGTERM', async () => {
    const port = await freePort();
    const proc = start(MAIN, {
      ...serviceEnv('security', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: port }),
      ...objectStoreEnv('security', server),
    });
    try {
      await waitReady(port, 30_000);
      // The schema is in place; aged rows are archived by an on-demand cycle.
      await db.sql`
        insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, occurred_at, received_at)
        values (gen_random_uuid(), 'case.opened', 'case', 'c-1', 'cases', '{}', now() - interval '200 days', now() - interval '200 days'),
               (gen_random_uuid(), 'case.opened', 'case', 'c-2', 'cases', '{}', now(), now())`;
      const unauthorized = await fetch(`http://127.0.0.1:${port}/v1/admin/archive/run`, { method: 'POST' });
      expect(unauthorized.status).toBe(401);
      // The timer's first cycle (5 s after start) may take the row first, or hold the lease (409)
      // while this call comes in: either way the aged row is archived exactly once.
      const run = await fetch(`http://127.0.0.1:${port}/v1/admin/archive/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      expect([200, 409], await run.text()).toContain(run.status);
      await eventually(async () => expect((await db.sql`select coalesce(sum(row_count), 0)::int as n from archive_ledger where table_name = 'audit_log'`)[0]!.n).toBe(1), { timeoutMs: 15_000 });
      // The announcement goes out through the outbox and the bus, and security audits it itself.
      await eventually(async () => {
        const seen = await fetch(`http://127.0.0.1:${port}/v1/audit?eventType=security.archive.batch`);
        expect(((await seen.json()) as { events: unknown[] }).events).toHaveLength(1);
      }, { timeoutMs: 15_000 });

      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'archive loop', 'consumers', 'outbox worker', 'object store', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('refuses to start with an invalid object store setting, naming it', async () => {
    const { code, output } = await runToExit(MAIN, {
      ...serviceEnv('security', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: await freePort() }),
      CRAIG_SECURITY__OBJECT_STORE_BACKEND: 'local',
      CRAIG_SECURITY__OBJECT_STORE_BUCKET: server.bucket,
    });
    expect(code).not.toBe(0);
    expect(output).toContain('OBJECT_STORE_BACKEND');
  });
});
