// main.ts as an operator runs it: a child process configured only through the environment,
// against a fresh database, the bus in that database, and the in-process S3 server.
import { migrationTemplate } from '@craig/db';
import { createPostgresBusTransport, MQ_MIGRATIONS, OutboxWorker, stageEvent } from '@craig/mq';
import { objectStoreEnv, runToExit, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { eventually, freePort, s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);
const TOKEN = 'an-admin-token-for-tests-0123456789';

let db: TestDatabase;
let server: S3TestServer;
beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'rules_main', max: 1 }), s3({ conditional: true, bucket: 'rules-main' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop()]);
});

// A producer service on the same bus (the bus lives in the rules database here).
async function producer(busUrl: string) {
  const producerDb = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: 'rules_main_cases', max: 1 });
  const transport = await createPostgresBusTransport({ url: busUrl, service: 'cases', pollIntervalMs: 100 });
  const outbox = new OutboxWorker({ service: 'cases', sql: producerDb.sql, databaseUrl: producerDb.url, transport, retention: { outboxDays: 30, inboxDays: 31 }, maxAttempts: 5, registry: new Registry() });
  return {
    db: producerDb,
    outbox,
    async drop() {
      await transport.close({ graceMs: 0 });
      await producerDb.drop();
    },
  };
}

describe('rules main.ts', () => {
  it('migrates, serves, evaluates events from the bus, archives on demand, and stops in reverse order on SIGTERM', async () => {
    const port = await freePort();
    const proc = start(MAIN, {
      ...serviceEnv('rules', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: port, runtimeRole: 'craig_rules_app' }),
      ...objectStoreEnv('rules', server),
    });
    try {
      await waitReady(port, 30_000);
      // An event from another service's outbox over the bus is evaluated, and rule.evaluated goes out.
      const cases = await producer(db.url);
      try {
        await cases.db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'safety', aggregateId: 'r-1', eventType: 'safety.reported', payload: { severity: 'high' } }));
        expect((await cases.outbox.drainOnce()).published).toBe(1);
        await eventually(async () => {
          const res = await fetch(`http://127.0.0.1:${port}/v1/evaluations?eventType=safety.reported`);
          expect(((await res.json()) as { evaluations: unknown[] }).evaluations).toMatchObject([{ outcome: 'flag', matchedRules: ['safety-high-severity'], snapshotVersion: 1 }]);
        }, { timeoutMs: 15_000 });
        await eventually(async () => expect(await db.sql`select event_type from event_outbox where published_at is not null`).toEqual([{ event_type: 'rule.evaluated' }]), { timeoutMs: 15_000 });
      } finally {
        await cases.drop();
      }

      // Aged rows are archived by an on-demand cycle, and the announcement is published.
      await db.sql`
        insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, input, evaluated_at)
        values (gen_random_uuid(), 'case.opened', (select id from rule_set_snapshots where rule_set = 'default'), 'pass', '{}', now() - interval '200 days')`;
      const unauthorized = await fetch(`http://127.0.0.1:${port}/v1/admin/archive/run`, { method: 'POST' });
      expect(unauthorized.status).toBe(401);
      // The timer's first cycle (5 s after start) may take the row first, or hold the lease (409)
      // while this call comes in: either way the row is archived exactly once.
      const run = await fetch(`http://127.0.0.1:${port}/v1/admin/archive/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      expect([200, 409], await run.text()).toContain(run.status);
      await eventually(async () => expect((await db.sql`select coalesce(sum(row_count), 0)::int as n from archive_ledger where table_name = 'rule_evaluations'`)[0]!.n).toBe(1), { timeoutMs: 15_000 });
      expect((await db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n).toBe(1);
      await eventually(async () => expect((await db.sql`select count(*)::int as n from event_outbox where event_type = 'rules.archive.batch' and published_at is not null`)[0]!.n).toBe(1), { timeoutMs: 15_000 });

      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'archive loop', 'consumers', 'outbox worker', 'object store', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('refuses to start with an invalid object store setting, naming it', async () => {
    const { code, output } = await runToExit(MAIN, {
      ...serviceEnv('rules', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: await freePort(), runtimeRole: 'craig_rules_app' }),
      CRAIG_RULES__OBJECT_STORE_BACKEND: 'local',
      CRAIG_RULES__OBJECT_STORE_BUCKET: server.bucket,
    });
    expect(code).not.toBe(0);
    expect(output).toContain('OBJECT_STORE_BACKEND');
  });
});
