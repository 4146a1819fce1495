// main.ts as an operator runs it: a child process configured only through the environment,
// against a fresh database with the PostgreSQL bus in that same database.
import { migrationTemplate } from '@craig/db';
import { createPostgresBusTransport, MQ_MIGRATIONS, OutboxWorker, stageEvent, type Transport } from '@craig/mq';
import { runToExit, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { eventually, freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);
const TOKEN = 'an-admin-token-for-tests-0123456789';

let db: TestDatabase;
let placements: TestDatabase;
beforeAll(async () => {
  [db, placements] = await Promise.all([testDatabase({ prefix: 'financial_main', max: 1 }), testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: 'financial_main_pl', max: 2 })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), placements.drop()]);
});

describe('financial main.ts', () => {
  it('migrates, serves, enqueues a placement event from the bus, imports, settles and publishes, and stops in reverse order', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = start(MAIN, {
      ...serviceEnv('financial', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: port, runtimeRole: 'craig_financial_app' }),
      CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: '30',
    });
    let transport: Transport | undefined;
    try {
      await waitReady(port, 30_000);

      // placements publishes placement.started on the bus; financial enqueues it.
      transport = await createPostgresBusTransport({ url: db.url, service: 'placements', pollIntervalMs: 100 });
      const outbox = new OutboxWorker({ service: 'placements', sql: placements.sql, databaseUrl: placements.url, transport, retention: { outboxDays: 30, inboxDays: 31 }, maxAttempts: 5, registry: new Registry() });
      await placements.sql.begin((tx) => stageEvent(tx, { aggregateType: 'placement', aggregateId: 'pl-main', eventType: 'placement.started', payload: { placementId: 'pl-main', caseId: 'case-1' } }));
      expect((await outbox.drainOnce()).published).toBe(1);
      await eventually(
        async () => {
          const res = await fetch(`${base}/v1/reconcile-queue?status=pending`);
          expect(((await res.json()) as { rows: Array<{ placementId: string }> }).rows.map((r) => r.placementId)).toEqual(['pl-main']);
        },
        { timeoutMs: 15_000 },
      );

      const imported = await fetch(`${base}/v1/subsidy-imports`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source: 'county', period: '2026-11', lines: [{ placementId: 'pl-main', amount: '812.40' }] }) });
      expect(imported.status).toBe(201);
      expect(((await imported.json()) as { import: { matched: number } }).import.matched).toBe(1);
      expect((await fetch(`${base}/v1/admin/reconcile/settle`, { method: 'POST' })).status).toBe(401);
      const settled = await fetch(`${base}/v1/admin/reconcile/settle`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
      expect(((await settled.json()) as { settled: number }).settled).toBe(1);
      // The outbox worker publishes subsidy.settled.
      await eventually(async () => expect((await db.sql`select count(*)::int as n from event_outbox where event_type = 'subsidy.settled' and published_at is not null`)[0]!.n).toBe(1), { timeoutMs: 15_000 });
      // The sweep answers with the configured window: the row was settled just now and stays.
      const sweep = await fetch(`${base}/v1/admin/reconcile/sweep`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(await sweep.json()).toMatchObject({ status: 'pruned', deleted: 0 });

      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'reconcile sweep', 'consumers', 'outbox worker', 'transport', 'database pool'] });
      // The setting reached the sweep: its start line carries the window.
      expect(proc.output()).toMatch(/"windowDays":30[^\n]*"msg":"local sweep started"/);
    } finally {
      proc.child.kill('SIGKILL');
      await transport?.close({ graceMs: 0 });
    }
  });

  it('refuses to start with a bad RECONCILE_SETTLED_RETENTION_DAYS, naming it', async () => {
    const { code, output } = await runToExit(MAIN, {
      ...serviceEnv('financial', { databaseUrl: db.url, busDatabaseUrl: db.url, adminToken: TOKEN, port: await freePort(), runtimeRole: 'craig_financial_app' }),
      CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: '90d',
    });
    expect(code).not.toBe(0);
    expect(output).toContain('CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS="90d"');
  });
});
