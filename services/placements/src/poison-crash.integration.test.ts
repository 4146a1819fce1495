// The real service, killed from outside: placements' main.ts as a child process whose
// `case.closed` handler is blocked on a row lock is SIGKILLed, and restarted, until the message
// stops coming back. After INBOX_MAX_DELIVERIES deliveries it is dead-lettered without running
// the handler again, the security service audits it with its delivery count, and placements
// keeps consuming. On both transports.
import { randomUUID } from 'node:crypto';
import { migrationTemplate } from '@craig/db';
import { ADMIN_TOKEN, archiveHarness, caseEventBody, startMain, waitReady, type ArchiveHarness, type MainProcess } from '@craig/service-testkit';
import { createService, securityMigrationSets, type SecurityService } from '@craig/svc-security';
import { eventually, freePort, testDatabase } from '@craig/testkit';
import { describe, expect, it } from 'vitest';
import { CASES_CONSUMER } from './consumer.ts';
import { PLACEMENTS_MIGRATION_SETS } from './migrations.ts';

const MAIN = new URL('./main.ts', import.meta.url);
const MAX_DELIVERIES = 3;

describe.each(['postgres', 'rabbitmq'] as const)('placements killed while its handler waits on a lock, on the %s transport', (kind) => {
  it(`is handed the message ${MAX_DELIVERIES} times, then the message is dead-lettered, audited by security with its delivery count, and placements keeps consuming`, async () => {
    const security: ArchiveHarness<SecurityService> = await archiveHarness({
      name: 'security',
      migrations: securityMigrationSets(),
      bucket: 'security-archive',
      transport: kind,
      queues: ['security.audit', CASES_CONSUMER],
      build: ({ deps, store }) => createService({ ...deps, inboxMaxRetries: 2, inboxMaxDeliveries: 5, archive: { store, hotWindowDays: 90, prefix: 'archive', everyMinutes: 60 }, consumers: { retryDelayMs: () => 10 } }),
    });
    const db = await testDatabase({ prefix: 'placements_t', template: migrationTemplate(PLACEMENTS_MIGRATION_SETS), max: 2 });
    const audit = await security.service.startConsumers();
    const cases = await security.bus.open('cases');
    const locker = await db.sql.reserve();
    let proc: MainProcess | undefined;
    try {
      const port = await freePort();
      const env = {
        CRAIG_PLACEMENTS__DATABASE_URL: db.url,
        CRAIG_PLACEMENTS__ADMIN_TOKEN: ADMIN_TOKEN,
        CRAIG_PLACEMENTS__HTTP_PORT: String(port),
        CRAIG_PLACEMENTS__INBOX_MAX_DELIVERIES: String(MAX_DELIVERIES),
        ...security.bus.env('placements'),
      };
      // A case placements knows, whose row a long transaction holds: closing it waits on the lock.
      const caseId = randomUUID();
      await db.sql`insert into case_refs (case_id, status) values (${caseId}, 'open')`;
      await locker`begin`;
      await locker`select 1 from case_refs where case_id = ${caseId} for update`;
      const lockerPid = (await locker<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
      const closedId = randomUUID();
      const closed = { eventId: closedId, routingKey: 'case.closed', body: caseEventBody('case.closed', caseId, closedId) };
      const dbNow = async () => (await db.sql<{ now: Date }[]>`select now()`)[0]!.now;
      /** Sessions started since `since` that wait on the locker (a killed child's session keeps waiting until its lock timeout). */
      const blockedSince = async (since: Date) =>
        (await db.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where datname = current_database() and backend_start >= ${since} and ${lockerPid}::int = any(pg_blocking_pids(pid))`)[0]!.n;

      const kills: number[] = [];
      for (let life = 1; life <= MAX_DELIVERIES; life++) {
        const since = await dbNow();
        proc = startMain(MAIN, env);
        await waitReady(port, 30_000);
        if (life === 1) expect(await cases.publish([closed])).toEqual([{ ok: true }]);
        // Its handler is waiting on the lock: kill it from outside, as an orchestrator or the OOM killer would.
        await eventually(async () => expect(await blockedSince(since)).toBe(1), { timeoutMs: 20_000, intervalMs: 50 });
        proc.child.kill('SIGKILL');
        await proc.exited;
        kills.push(life);
      }
      expect(kills).toEqual([1, 2, 3]);

      // The next start is not handed the message: it is dead-lettered, and security audits it.
      const since = await dbNow();
      proc = startMain(MAIN, env);
      await waitReady(port, 30_000);
      const [letter] = await eventually(
        async () => {
          const found = await security.db.sql<{ consumer: string; event_id: string; routing_key: string; error: string; attempts: number; deliveries: number }[]>`
            select consumer, event_id::text, routing_key, error, attempts, deliveries from dead_letter_audit where message_id = ${closed.eventId}`;
          expect(found).toHaveLength(1);
          return found;
        },
        { timeoutMs: 30_000 },
      );
      expect(letter).toEqual({
        consumer: CASES_CONSUMER,
        event_id: closed.eventId,
        routing_key: 'case.closed',
        error: `delivered ${MAX_DELIVERIES} times without an acknowledgement: its consumer died or timed out each time`,
        attempts: 1,
        deliveries: MAX_DELIVERIES,
      });

      // Placements keeps consuming (a case it has not seen), and never ran the handler again.
      const next = randomUUID();
      const openedId = randomUUID();
      const opened = { eventId: openedId, routingKey: 'case.opened', body: caseEventBody('case.opened', next, openedId) };
      expect(await cases.publish([opened])).toEqual([{ ok: true }]);
      await eventually(async () => expect(await db.sql`select status from case_refs where case_id = ${next}`).toEqual([{ status: 'open' }]), { timeoutMs: 15_000 });
      expect(await blockedSince(since)).toBe(0);
      expect(proc.child.exitCode).toBeNull();
      await locker`rollback`;
      expect(await db.sql`select status from case_refs where case_id = ${caseId}`).toEqual([{ status: 'open' }]);
      expect(await db.sql`select event_id::text from event_inbox where consumer = ${CASES_CONSUMER} order by received_at`).toEqual([{ event_id: opened.eventId }]);
      expect((await proc.terminate()).code).toBe(0);
    } finally {
      proc?.child.kill('SIGKILL');
      locker.release();
      await audit.close({ graceMs: 0 });
      await cases.close({ graceMs: 0 });
      await db.drop();
      await security.drop();
    }
  }, 180_000);
});
