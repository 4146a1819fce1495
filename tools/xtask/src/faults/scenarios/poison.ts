// A message that kills its consumer: placements' `case.closed` handler for one case never
// finishes (a session of the scenario's own holds that case's row), and each time it is stuck
// there the placements process is SIGKILLed from outside, as an OOM or a segfault would. The
// supervisor restarts it and the message comes back. After INBOX_MAX_DELIVERIES hand-outs it
// must be dead-lettered with its delivery count instead of handed out again, the security
// service must audit the dead letter, every other event must be applied exactly once, and
// placements must keep consuming.
import type { Sql } from '@craig/db';
import { count } from '../probes.ts';
import { Outcome, type FaultScenario, type ScenarioContext } from '../scenario.ts';
import type { FaultService } from '../stack.ts';
import { waitFor } from '../wait.ts';

const MAX_DELIVERIES = 5;
const INNOCENT = 20;
const AFTER = 10;

/** Sessions of placements' database, started after `since`, waiting on the holder's lock. */
async function stuckSince(sql: Sql, holderPid: number, since: Date): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and backend_start >= ${since} and ${holderPid}::int = any(pg_blocking_pids(pid))`;
  return row!.n;
}

async function openCase(cases: FaultService, subject: string): Promise<string> {
  return (await cases.call<{ id: string }>('POST', '/v1/cases', { subject })).id;
}

function poisonScenario(transport: 'postgres' | 'rabbitmq'): FaultScenario {
  return {
    name: `poison-crash/${transport === 'postgres' ? 'bus' : 'rabbitmq'}`,
    summary: `a message whose handler kills placements each time (SIGKILL while it holds it), on ${transport === 'postgres' ? 'the bus' : 'RabbitMQ'}`,
    fast: true,
    ...(transport === 'rabbitmq' ? { needs: ['rabbitmq'] as const } : {}),
    async run(ctx: ScenarioContext) {
      const out = new Outcome(`SIGKILL placements each time it holds one case.closed (INBOX_MAX_DELIVERIES=${MAX_DELIVERIES})`);
      const store = await ctx.s3();
      const stack = await ctx.stack({ transport, objectStore: store });
      const security = await stack.start('security', { ARCHIVE_EVERY_MINUTES: '60' });
      const placements = await stack.start('placements', { INBOX_MAX_DELIVERIES: String(MAX_DELIVERIES) });
      const cases = await stack.start('cases');
      const sql = stack.sql('placements');
      const audit = stack.sql('security');

      const poisonCase = await openCase(cases, 'the poison');
      const innocents: string[] = [];
      for (let i = 0; i < INNOCENT; i++) innocents.push(await openCase(cases, `innocent ${i}`));
      await waitFor('placements to know every case', async () => (await count(sql, 'case_refs')) === INNOCENT + 1, { timeoutMs: 60_000, intervalMs: 100 });

      const holder = await sql.reserve();
      ctx.defer(() => holder.release());
      await holder`begin`;
      await holder`select 1 from case_refs where case_id = ${poisonCase} for update`;
      const holderPid = (await holder<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;

      // The poison first, then the innocent closes around it. A session counts as this life's
      // when it started after the last kill (the first life's pool opened before any).
      let since = new Date(0);
      await cases.call('POST', `/v1/cases/${poisonCase}/close`);
      for (const id of innocents) await cases.call('POST', `/v1/cases/${id}/close`);
      const firstKill = performance.now();
      let kills = 0;
      const deadLettered = async () => (await count(audit, 'dead_letter_audit', `consumer = 'placements.cases'`)) > 0;
      while (!(await deadLettered())) {
        // Stuck on the poison (a session of this process life waits on the holder) or done with it.
        const state = await waitFor('placements stuck on the poison, or the poison dead-lettered', async () => ((await stuckSince(sql, holderPid, since)) > 0 ? 'stuck' : (await deadLettered()) ? 'dead' : undefined), { timeoutMs: 120_000, intervalMs: 50 });
        if (state === 'dead') break;
        const before = placements.pid();
        since = (await sql<{ now: Date }[]>`select now()`)[0]!.now;
        placements.kill('SIGKILL');
        kills++;
        ctx.progress(`SIGKILLed placements (pid ${before}) holding the poison, ${kills} time(s)`);
        if (kills > MAX_DELIVERIES + 2) break;
        await waitFor('placements restarted', () => placements.supervisor.pid !== undefined && placements.supervisor.pid !== before, { timeoutMs: 60_000 });
      }
      await waitFor('the dead letter audited by security', deadLettered, { timeoutMs: 120_000, intervalMs: 250 });
      out.recoverMs = performance.now() - firstKill;
      out.atMost('times placements was killed holding it', kills, MAX_DELIVERIES);
      out.atLeast('times placements was killed holding it (the fault happened)', kills, 1);
      const [letter] = await audit<{ deliveries: number | null; attempts: number; routing_key: string; error: string }[]>`
        select deliveries, attempts, routing_key, error from dead_letter_audit where consumer = 'placements.cases'`;
      out.equal('dead letters of placements audited (the poison alone)', await count(audit, 'dead_letter_audit'), 1);
      out.equal('audited routing key', letter?.routing_key ?? '', 'case.closed');
      out.equal('audited delivery count', letter?.deliveries ?? -1, MAX_DELIVERIES);

      // Every innocent close applied, once; the poison never (its handler never committed).
      await waitFor('every innocent close applied', async () => (await count(sql, 'case_refs', `status = 'closed'`)) === INNOCENT, { timeoutMs: 120_000, intervalMs: 250 });
      const closes = await count(sql, 'event_inbox', `event_type = 'case.closed'`);
      out.equal('case.closed events applied (inbox records)', closes, INNOCENT);
      out.equal('the poison case, never applied', (await sql<{ status: string }[]>`select status from case_refs where case_id = ${poisonCase}`)[0]?.status ?? '', 'open');
      await holder`rollback`;

      // And it keeps consuming.
      for (let i = 0; i < AFTER; i++) await openCase(cases, `after ${i}`);
      await waitFor('placements to apply what came after', async () => (await count(sql, 'case_refs')) === INNOCENT + 1 + AFTER, { timeoutMs: 60_000, intervalMs: 100 });
      out.equal('restarts: one per kill', placements.supervisor.restarts, kills);
      out.equal('security restarts', security.supervisor.restarts, 0);
      const opened = await count(sql, 'event_inbox', `event_type = 'case.opened'`);
      out.equal('case.opened events applied', opened, INNOCENT + 1 + AFTER);

      out.expected = INNOCENT + (INNOCENT + 1 + AFTER);
      out.kept = closes + opened;
      out.lost = out.expected - out.kept;
      // Security audits every event it sees once (its own inbox): a row twice is a side effect run twice.
      out.duplicated = (await count(audit, 'audit_log')) - (await count(audit, '(select distinct event_id from audit_log) d'));
      return out.result();
    },
  };
}

export const poisonBus = poisonScenario('postgres');
export const poisonRabbit = poisonScenario('rabbitmq');
