// The stack's own PostgreSQL cluster stopped with `pg_ctl stop -m immediate` (every backend
// gone at once, no checkpoint, crash recovery at the next start) and started again, during a
// drain, a prune and an archive cycle. The services must stay up or be restarted by the
// supervisor, their readiness must go red and then green, no staged event may be lost, no side
// effect may run twice (the inbox deduplicates what a lost commit republishes), and no advisory
// lock may stay held. The cluster is the scenario's own (embedded): the machine's server is
// never stopped.
import { LOCK_KEYS, type Sql } from '@craig/db';
import type { EmbeddedServer } from '@craig/testkit';
import { agedLeft, ARCHIVE_SEED, checkArchivedOnce, cyclesDone, seedAudit } from './archive-common.ts';
import { advisoryHolders, auditDeletes, count, waitingOnLock } from '../probes.ts';
import { Outcome, type FaultScenario, type ScenarioContext } from '../scenario.ts';
import type { FaultService } from '../stack.ts';
import { sleep, waitFor } from '../wait.ts';

/** Every /readyz answer from now on (0: no answer), until stopped. */
function watchReadiness(services: readonly FaultService[]): { stop(): Map<string, number[]>; green(timeoutMs: number): Promise<void> } {
  const seen = new Map<string, number[]>(services.map((s) => [s.supervisor.name, []]));
  let running = true;
  const loop = (async () => {
    while (running) {
      await Promise.all(
        services.map(async (s) => {
          let status = 0;
          try {
            const res = await fetch(`${s.url}/readyz`, { signal: AbortSignal.timeout(1000) });
            await res.arrayBuffer();
            status = res.status;
          } catch {
            // not answering: counted as 0
          }
          const list = seen.get(s.supervisor.name)!;
          if (list.at(-1) !== status) list.push(status);
        }),
      );
      await sleep(150);
    }
  })();
  return {
    stop() {
      running = false;
      void loop;
      return seen;
    },
    // Until every service last answered 200, or the time is up (the check then reports the order).
    async green(timeoutMs) {
      const until = performance.now() + timeoutMs;
      while (running && performance.now() < until && [...seen.values()].some((list) => list.at(-1) !== 200)) await sleep(150);
    },
  };
}

/**
 * How long readiness may stay red once the data has recovered. The archiver can be done within
 * a second or two of the restart, before the pool behind /readyz has reconnected (a fixed 2 s
 * grace then failed the check while the service was still coming back).
 */
const READY_AGAIN_MS = 30_000;

/** Readiness went red (anything but 200) after the fault and green again after it. */
function redThenGreen(out: Outcome, transitions: Map<string, number[]>): void {
  for (const [name, list] of transitions) {
    const red = list.findIndex((s) => s !== 200);
    const green = red >= 0 && list.slice(red).includes(200);
    out.check(`${name} readiness red then green`, green && list.at(-1) === 200, `readyz answers in order: ${list.join(' → ')}`);
  }
}

/** `pg_ctl stop -m immediate`, a pause, and the start again; resolves with when it was stopped. */
async function crashAndRestart(ctx: ScenarioContext, server: EmbeddedServer, downMs: number): Promise<number> {
  const crashedAt = performance.now();
  await server.crash();
  ctx.progress(`PostgreSQL stopped -m immediate; starting it again in ${downMs / 1000} s`);
  await sleep(downMs);
  await server.restart();
  ctx.progress('PostgreSQL started (crash recovery done)');
  return crashedAt;
}

/** No session of the database holds `key` (within a few seconds: a live cycle may hold it briefly). */
async function lockFree(out: Outcome, sql: Sql, key: bigint, name: string): Promise<void> {
  const free = await waitFor(`${name} to be free`, async () => (await advisoryHolders(sql, key)) === 0, { timeoutMs: 30_000, intervalMs: 100 }).catch(() => false);
  out.check(`${name} not stranded`, free, free ? 'free' : 'still held 30 s after recovery');
}

const EVENTS = 20_000;

function drainScenario(transport: 'postgres' | 'rabbitmq', downMs: number, fast: boolean): FaultScenario {
  const via = transport === 'postgres' ? 'bus' : 'rabbitmq';
  return {
    name: downMs > 5000 ? `pg-outage-drain/${via}` : `pg-restart-drain/${via}`,
    summary: `PostgreSQL stopped -m immediate for ${downMs / 1000} s while cases drains ${EVENTS.toLocaleString('en-US')} events to security (${transport === 'postgres' ? 'the bus' : 'RabbitMQ'})`,
    fast,
    ...(transport === 'rabbitmq' ? { needs: ['rabbitmq'] as const } : {}),
    async run(ctx) {
      const out = new Outcome(`pg_ctl stop -m immediate at a quarter of the drain, ${downMs / 1000} s down`);
      const server = await ctx.embedded();
      // Security archives too: it needs its object store, though this scenario archives nothing.
      const store = await ctx.s3();
      const stack = await ctx.stack({ transport, serverUrl: server.url, objectStore: store });
      const security = await stack.start('security', { ARCHIVE_EVERY_MINUTES: '60' });
      await stack.migrate('cases', await stack.env('cases'));
      const cases = stack.sql('cases');
      // Staged as the cases service stages them (one envelope per row), all pending.
      await cases`
        insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
        select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', jsonb_build_object('subject', 'faults ' || g)
        from generate_series(1, ${EVENTS}) g`;
      const producer = await stack.start('cases');
      const watch = watchReadiness([producer, security]);
      await waitFor('a quarter of the backlog published', async () => (await count(cases, 'event_outbox', 'published_at is not null')) >= EVENTS / 4, { timeoutMs: 120_000, intervalMs: 50 });
      const crashedAt = await crashAndRestart(ctx, server, downMs);
      const audit = stack.sql('security');
      await waitFor(
        'every staged event published and audited',
        async () => (await count(cases, 'event_outbox', 'published_at is null')) === 0 && (await count(audit, '(select distinct event_id from audit_log) d')) >= EVENTS,
        { timeoutMs: 240_000, intervalMs: 250 },
      ).catch(async (error: unknown) => {
        // What every session of the stack is doing, for whoever reads the failure.
        const sessions = await stack.sql('bus')<{ db: string; app: string; state: string; wait: string | null; query: string }[]>`
          select datname as db, application_name as app, state, wait_event as wait, left(query, 80) as query from pg_stat_activity where datname is not null and pid <> pg_backend_pid() order by datname, app`;
        ctx.progress(`sessions when it gave up:\n${sessions.map((r) => `    ${r.db} ${r.app} ${r.state} ${r.wait ?? ''} ${r.query}`).join('\n')}`);
        ctx.progress(`pending ${await count(cases, 'event_outbox', 'published_at is null')}, audited ${await count(audit, '(select distinct event_id from audit_log) d')}`);
        throw error;
      });
      out.recoverMs = performance.now() - crashedAt;
      // The data recovered; readiness may follow a little later (the pool reconnects on its own schedule).
      await watch.green(READY_AGAIN_MS);
      redThenGreen(out, watch.stop());
      const rows = await count(audit, 'audit_log');
      const distinct = await count(audit, '(select distinct event_id from audit_log) d');
      out.equal('outbox rows still pending', await count(cases, 'event_outbox', 'published_at is null'), 0);
      out.equal('outbox rows parked', await count(cases, 'event_outbox', 'parked_at is not null'), 0);
      out.equal('events audited', distinct, EVENTS);
      out.equal('inbox records of the audit consumer', await count(audit, 'event_inbox', `consumer = 'security.audit'`), EVENTS);
      if (transport === 'postgres') {
        out.equal('bus deliveries left', await count(stack.sql('bus'), 'bus_deliveries'), 0);
        out.equal('dead letters', await count(stack.sql('bus'), 'bus_dead_letters'), 0);
      }
      out.equal('dead letters audited', await count(audit, 'dead_letter_audit'), 0);
      await lockFree(out, cases, LOCK_KEYS.transportPrune, 'cases prune lock');
      out.expected = EVENTS;
      out.kept = distinct;
      out.lost = EVENTS - distinct;
      out.duplicated = rows - distinct;
      return out.result();
    },
  };
}

export const pgRestartDrainBus = drainScenario('postgres', 3000, true);
export const pgRestartDrainRabbit = drainScenario('rabbitmq', 3000, true);
/** Longer than a consumer's whole retry schedule: a database outage must not dead-letter healthy events. */
export const pgOutageDrainBus = drainScenario('postgres', 30_000, false);
export const pgOutageDrainRabbit = drainScenario('rabbitmq', 30_000, false);

export const pgRestartPrune: FaultScenario = {
  name: 'pg-restart-prune',
  summary: 'PostgreSQL stopped -m immediate while a transport prune batch is in flight',
  fast: true,
  async run(ctx) {
    const out = new Outcome('pg_ctl stop -m immediate during the 3rd prune batch, 3 s down');
    const server = await ctx.embedded();
    const stack = await ctx.stack({ transport: 'postgres', serverUrl: server.url });
    const settings = { EVENT_PRUNE_EVERY_TICKS: '2' };
    await stack.migrate('cases', await stack.env('cases', settings));
    const sql = stack.sql('cases');
    const aged = 30_000;
    const kept = 700;
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{}', t, t + interval '1 s'
      from (select now() - interval '40 days' + g * interval '10 ms' as t from generate_series(1, ${aged}) g) x`;
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, parked_at, parked_reason)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{}', now() - interval '50 days', now(), 'max_attempts'
      from generate_series(1, ${kept}) g`;
    await auditDeletes(sql, 'event_outbox', ['id', 'published_at', 'parked_at']);
    const [held] = await sql<{ id: string }[]>`select id::text from event_outbox where published_at is not null order by created_at offset 12500 limit 1`;
    const holder = await sql.reserve();
    await holder`begin`;
    await holder`select 1 from event_outbox where id = ${held!.id} for update`;
    const cases = await stack.start('cases', settings);
    const watch = watchReadiness([cases]);
    await waitFor('a prune batch in flight', async () => (await waitingOnLock(sql, 'cases:prune')).length > 0, { timeoutMs: 60_000, intervalMs: 25 });
    const crashedAt = await crashAndRestart(ctx, server, 3000);
    holder.release();
    await waitFor('every eligible row pruned after the restart', async () => (await count(sql, 'event_outbox', 'published_at is not null')) === 0, { timeoutMs: 120_000, intervalMs: 250 });
    out.recoverMs = performance.now() - crashedAt;
    // The data recovered; readiness may follow a little later (the pool reconnects on its own schedule).
    await watch.green(READY_AGAIN_MS);
    redThenGreen(out, watch.stop());
    const deleted = await count(sql, 'fault_deleted_event_outbox');
    out.equal('rows deleted', deleted, aged);
    out.equal('rows deleted twice', deleted - (await count(sql, '(select distinct id from fault_deleted_event_outbox) d')), 0);
    out.equal('pending or parked rows deleted', await count(sql, 'fault_deleted_event_outbox', 'published_at is null'), 0);
    const parked = await count(sql, 'event_outbox', 'parked_at is not null');
    out.equal('parked rows kept', parked, kept);
    await lockFree(out, sql, LOCK_KEYS.transportPrune, 'cases prune lock');
    out.expected = kept;
    out.kept = parked;
    out.lost = kept - parked;
    return out.result();
  },
};

export const pgRestartArchive: FaultScenario = {
  name: 'pg-restart-archive',
  summary: "PostgreSQL stopped -m immediate while security's archiver commits a batch",
  fast: true,
  async run(ctx) {
    const out = new Outcome('pg_ctl stop -m immediate at a ledger commit, 3 s down');
    const server = await ctx.embedded();
    const store = await ctx.s3();
    const stack = await ctx.stack({ transport: 'postgres', serverUrl: server.url, objectStore: store });
    const settings = { ARCHIVE_EVERY_MINUTES: '60' };
    const env = await stack.env('security', settings);
    await stack.migrate('security', env);
    const sql = stack.sql('security');
    await seedAudit(sql, ARCHIVE_SEED);
    const holder = await sql.reserve();
    await holder`begin`;
    await holder`lock table archive_ledger in share mode`;
    const security = await stack.start('security', settings);
    const watch = watchReadiness([security]);
    await waitFor('a ledger commit in flight', async () => (await waitingOnLock(sql, 'security:archive')).length > 0, { timeoutMs: 60_000, intervalMs: 25 });
    const crashedAt = await crashAndRestart(ctx, server, 3000);
    holder.release();
    const before = await cyclesDone(security).catch(() => 0);
    // The next timer cycle is an hour away: ask for one, as an operator would.
    await waitFor(
      'every aged row archived after the restart',
      async () => {
        if ((await agedLeft(sql)) === 0) return true;
        if ((await cyclesDone(security).catch(() => before)) <= before) await security.request('POST', '/v1/admin/archive/run').catch(() => undefined);
        return false;
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    out.recoverMs = performance.now() - crashedAt;
    // The data recovered; readiness may follow a little later (the pool reconnects on its own schedule).
    await watch.green(READY_AGAIN_MS);
    redThenGreen(out, watch.stop());
    await lockFree(out, sql, LOCK_KEYS.archiveLease, 'archive lease');
    // What the crashed cycle wrote but never committed (its log says which: the commit that
    // failed, the batches discarded behind it) is listed as orphans, and nothing else.
    const written = (await security.log()).filter((l) => l.msg === 'archive batch' && ['failed', 'discarded', 'rolled_back'].includes(String(l.outcome))).map((l) => (typeof l.key === 'string' ? l.key : ''));
    out.atLeast('batches written but not committed by the crashed cycle', written.length, 1);
    await checkArchivedOnce(out, stack, env, sql, written);
    return out.result();
  },
};
