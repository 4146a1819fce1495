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
  [db, server] = await Promise.all([testDatabase({ prefix: 'exchange_main', max: 1 }), s3({ conditional: true, bucket: 'exchange-main' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

const baseEnv = (port: number) => ({
  ...serviceEnv('exchange', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port }),
  ...objectStoreEnv('exchange', server),
});

describe('exchange main.ts', () => {
  it('migrates, consumes case.opened, works it off, refuses a stale invalidation, archives on demand, and stops in reverse order on SIGTERM', async () => {
    const port = await freePort();
    const proc = start(MAIN, baseEnv(port));
    const url = (path: string) => `http://127.0.0.1:${port}${path}`;
    try {
      await waitReady(port, 30_000);

      // A case.opened on the bus (staged in this database's own outbox: its outbox worker
      // publishes it, and its consumer receives it like any other service's event).
      await db.sql`
        insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
        values (gen_random_uuid(), 'case', 'case-main', 'case.opened', '{"personRefs": ["p-1!match", "p-2!clear"]}')`;
      const screening = await eventually(
        async () => {
          const jobs = (await (await fetch(url('/v1/send-jobs'))).json()) as { sendJobs: Array<{ caseId: string; status: string }> };
          expect(jobs.sendJobs).toEqual([expect.objectContaining({ caseId: 'case-main', status: 'sent' })]);
          const [run] = await db.sql<{ id: string }[]>`select id::text from ssa_screening_runs where case_id = 'case-main' and status = 'completed'`;
          expect(run).toBeDefined();
          return (await (await fetch(url(`/v1/screenings/${run!.id}`))).json()) as { screening: { id: string; members: Array<{ status: string; handedOff: boolean }> } };
        },
        { timeoutMs: 20_000 },
      );
      expect(screening.screening.members.map((m) => [m.status, m.handedOff])).toEqual([
        ['matched', true],
        ['cleared', false],
      ]);
      // Inside the freshness horizon: invalidation is allowed.
      expect((await fetch(url(`/v1/screenings/${screening.screening.id}/invalidate`), { method: 'POST' })).status).toBe(200);

      // Aged history: a whole chain past the hot window and the horizon.
      await db.sql`
        with r as (insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
                   values ('case-old', 'completed', current_date - 800, now() - interval '800 days', now() - interval '800 days') returning id)
        insert into ssa_screening_members (run_id, person_ref, status, created_at, completed_at)
        select id, 'p-old', 'cleared', now() - interval '800 days', now() - interval '800 days' from r`;
      const [old] = await db.sql<{ id: string }[]>`select id::text from ssa_screening_runs where case_id = 'case-old'`;
      const refused = await fetch(url(`/v1/screenings/${old!.id}/invalidate`), { method: 'POST' });
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('screening_past_freshness');

      expect((await fetch(url('/v1/admin/archive/run'), { method: 'POST' })).status).toBe(401);
      // The timer's first cycle (5 s after start) may take the chain first, or hold the lease
      // (409) while this call comes in: either way member then run are archived exactly once.
      const run = await fetch(url('/v1/admin/archive/run'), { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      expect([200, 409], await run.text()).toContain(run.status);
      await eventually(async () =>
        expect(await db.sql`select table_name, sum(row_count)::int as n from archive_ledger group by table_name order by table_name`).toEqual([
          { table_name: 'ssa_screening_members', n: 1 },
          { table_name: 'ssa_screening_runs', n: 1 },
        ]),
      { timeoutMs: 15_000 });
      expect((await fetch(url(`/v1/screenings/${old!.id}`))).status).toBe(404);

      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'archive loop', 'send job sweep', 'worker', 'consumers', 'outbox worker', 'object store', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('refuses to start with a hot window under 365 days or a bad send-job window, naming them', async () => {
    const { code, output } = await runToExit(MAIN, { ...baseEnv(await freePort()), CRAIG_EXCHANGE__ARCHIVE_HOT_WINDOW_DAYS: '90', CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS: '30d' });
    expect(code).not.toBe(0);
    expect(output).toContain('CRAIG_EXCHANGE__ARCHIVE_HOT_WINDOW_DAYS');
    expect(output).toContain('CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS');
  });
});
