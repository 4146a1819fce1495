// Two replicas of every service for a few minutes of demo traffic: `pnpm xtask devstack
// --replicas 2` on a cluster of the scenario's own. Every sweep, archive cycle and cleanup cycle
// of a database must run in one replica at a time (their advisory locks), nothing may deadlock,
// the devstack's own verdict must be ok, and `pnpm xtask invariants` must be green for every
// service afterwards.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { LOCK_KEYS } from '@craig/db';
import { SERVICE_NAMES, SERVICE_PROFILES, type ServiceName } from '@craig/settings';
import { withDatabase } from '../../devstack/env.ts';
import { freePortRange } from '../../ports.ts';
import { runXtask } from '../../run.ts';
import { capture } from '../../test-io.ts';
import { Outcome, type FaultScenario, type ScenarioContext } from '../scenario.ts';

/** Prune cycles a replica's log says it ran, and skipped because the other held the lock. */
async function cycles(file: string, replica: string, ran: string): Promise<{ replica: string; ran: number; skipped: number }> {
  const text = await readFile(file, 'utf8').catch(() => '');
  let done = 0;
  let skipped = 0;
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const msg = (JSON.parse(raw) as { msg?: unknown }).msg;
      if (msg === ran) done++;
      else if (msg === `${ran} skipped`) skipped++;
    } catch {
      // a line that is not JSON
    }
  }
  return { replica, ran: done, skipped };
}

/** What the sampler saw of one kind of work (a prune DELETE, an archive commit, a cleanup step). */
interface Sightings {
  /** Samples in which that work was running. */
  seen: number;
  /** ... by two sessions of one database at once. */
  concurrent: number;
  /** ... on a session that did not hold the work's advisory lock. */
  unlocked: number;
}

const WORK = [
  { kind: 'prune', app: ':prune', query: '%delete from%', key: LOCK_KEYS.transportPrune },
  { kind: 'archive', app: ':archive', query: '%delete from%', key: LOCK_KEYS.archiveLease },
  // A step or a window of steps; not the history sweep's `delete from cleanup_steps`, which runs
  // on the same application name under a lock of its own (the next row).
  { kind: 'cleanup', app: ':cleanup', query: '%select cleanup_step%', key: LOCK_KEYS.cleanupCoordinator },
  { kind: 'cleanup history', app: ':cleanup', query: '%delete from%', key: LOCK_KEYS.cleanupHistorySweep },
] as const;

/**
 * Sample the server's sessions every 5 ms until stopped, all kinds of work in one query: which
 * ones are running a sweep's DELETE, an archive batch's delete or a cleanup step right now, per
 * database, and whether each holds that work's advisory lock. Two at once, or one without the
 * lock, is what the locks exist to prevent (a lock taken on one connection while the work runs
 * on another would show here). A sweep of the devstack's seeded history is a few statements of
 * a few milliseconds each, so the sampling has to be this fine to see one at all.
 */
function sampleWork(url: string): { stop(): Promise<Map<string, Sightings>> } {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const found = new Map<string, Sightings>(WORK.map((w) => [w.kind, { seen: 0, concurrent: 0, unlocked: 0 }]));
  const kinds = WORK.map((w) => w.kind);
  let running = true;
  const loop = (async () => {
    while (running) {
      const rows = await sql<{ kind: string; datname: string; holds: boolean }[]>`
        select w.kind, a.datname, exists (
                 select 1 from pg_locks l
                 where l.pid = a.pid and l.locktype = 'advisory' and l.granted and l.objsubid = 1
                   and ((l.classid::bigint << 32) | l.objid::bigint) = w.key) as holds
        from pg_stat_activity a
        join unnest(${kinds}::text[], ${WORK.map((w) => '%' + w.app)}::text[], ${WORK.map((w) => w.query)}::text[], ${WORK.map((w) => w.key.toString())}::bigint[]) as w(kind, app, query, key)
          on a.application_name like w.app and a.query ilike w.query
        where a.state = 'active' and a.pid <> pg_backend_pid()`.catch(() => []);
      for (const kind of kinds) {
        const mine = rows.filter((r) => r.kind === kind);
        const f = found.get(kind)!;
        const perDb = new Map<string, number>();
        for (const r of mine) perDb.set(r.datname, (perDb.get(r.datname) ?? 0) + 1);
        if (mine.length > 0) f.seen++;
        if ([...perDb.values()].some((n) => n > 1)) f.concurrent++;
        if (mine.some((r) => !r.holds)) f.unlocked++;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await sql.end({ timeout: 5 });
      return found;
    },
  };
}

function replicaScenario(name: string, only: readonly ServiceName[] | undefined, seconds: number, fast: boolean): FaultScenario {
  const services = only ?? SERVICE_NAMES;
  return {
    name,
    summary: `two replicas of ${only ? services.join(', ') : 'every service'} for ${seconds} s of demo traffic (pnpm xtask devstack --replicas 2)`,
    fast,
    async run(ctx: ScenarioContext) {
      const out = new Outcome(`devstack --replicas 2 --for ${seconds}`);
      const server = await ctx.embedded();
      const stateDir = await mkdtemp(join(tmpdir(), 'craig-faults-replicas-'));
      ctx.defer(() => rm(stateDir, { recursive: true, force: true }));
      const prefix = `craig_rep_${Math.random().toString(36).slice(2, 7)}_`;
      const portBase = await freePortRange(SERVICE_NAMES.length * 2);
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(ctx.baseEnv)) if (v !== undefined && !k.startsWith('CRAIG_') && k !== 'DATABASE_URL') env[k] = v;
      env.CRAIG__DATABASE_URL = server.url;
      const args = ['--import', 'tsx', join(ctx.root, 'tools/xtask/src/main.ts'), 'devstack', '--quiet', '--status-port', '0', '--replicas', '2', '--for', String(seconds), '--state-dir', stateDir, '--port-base', String(portBase), '--db-prefix', prefix, '--history-rows', '5000'];
      if (only) args.push('--only', only.join(','));
      const started = performance.now();
      const runStart = new Date();
      const sampler = sampleWork(server.url);
      const child = spawn(process.execPath, args, { cwd: ctx.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      ctx.defer(() => child.exitCode === null && child.kill('SIGKILL'));
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      out.recoverMs = performance.now() - started;
      for (const [kind, f] of await sampler.stop()) {
        out.check(`${kind} work: one session per database at a time, always the lock holder`, f.concurrent === 0 && f.unlocked === 0 && (kind !== 'prune' || f.seen > 0), `seen in ${f.seen} samples; ${f.concurrent} with two sessions of one database at once; ${f.unlocked} on a session without the lock`);
      }
      out.equal('devstack exit code (its own verdict: every replica stayed up, sweeps and archives ran)', code ?? -1, 0);
      if (code !== 0) ctx.progress(output.split('\n').slice(-30).join('\n'));

      // Both replicas took part: each ran sweeps, and each gave way to the other's lock.
      for (const service of services) {
        const logs = [join(stateDir, 'logs', `${service}.log`), join(stateDir, 'logs', `${service}-2.log`)];
        const prune = await Promise.all(logs.map((f, i) => cycles(f, `r${i + 1}`, 'event retention prune cycle')));
        out.check(`${service}: prune cycles ran`, prune.some((p) => p.ran > 0), prune.map((p, i) => `replica ${i + 1}: ${p.ran} ran, ${p.skipped} skipped (lock held by the other)`).join('; '));
      }

      // No deadlock anywhere (the server's own count), and every invariant green.
      const admin = postgres(server.url, { max: 1, onnotice: () => {} });
      try {
        const rows = await admin<{ datname: string; deadlocks: number }[]>`select datname, deadlocks::int from pg_stat_database where starts_with(datname, ${prefix})`;
        out.equal('deadlocks in the stack\'s databases', rows.reduce((n, r) => n + r.deadlocks, 0), 0);
      } finally {
        await admin.end({ timeout: 5 });
      }
      // Report-only reads: as the server's login, with each service's database named.
      const invariantsEnv = (service: ServiceName) => ({ [`${SERVICE_PROFILES[service].envPrefix}DATABASE_URL`]: withDatabase(server.url, `${prefix}${service}`) });
      let green = 0;
      for (const service of services) {
        const stdout = capture();
        const result = await runXtask(['invariants', service, '--json'], { env: invariantsEnv(service), stdout, stderr: stdout, root: ctx.root });
        const report = result === 0 || result === 1 ? (JSON.parse(stdout.text()) as { invariants: Array<{ name: string; ok: boolean; detail: string }> }) : undefined;
        let failing = report?.invariants.filter((i) => !i.ok) ?? [{ name: 'invariants', ok: false, detail: stdout.text().slice(0, 200) }];
        // The inventory demo seeds parked rows on purpose (parked long ago, never pruned): only a
        // row parked during this run turns that invariant red here.
        let note = '';
        if (failing.some((f) => f.name === 'event_outbox_parked')) {
          const db = postgres(withDatabase(server.url, `${prefix}${service}`), { max: 1, onnotice: () => {} });
          try {
            const [row] = await db<{ during: number; before: number }[]>`
              select count(*) filter (where parked_at >= ${runStart})::int as during, count(*) filter (where parked_at < ${runStart})::int as before
              from event_outbox where parked_at is not null`;
            if (row!.during === 0) {
              failing = failing.filter((f) => f.name !== 'event_outbox_parked');
              note = ` (${row!.before} parked rows seeded by the demo, parked before the run; none parked during it)`;
            }
          } finally {
            await db.end({ timeout: 5 });
          }
        }
        if (failing.length === 0) green++;
        out.check(`${service}: invariants green`, failing.length === 0, failing.length ? failing.map((f) => `${f.name}: ${f.detail}`).join('; ') : `all hold${note}`);
      }
      // Counted in services: each must come out with every invariant green.
      out.expected = services.length;
      out.kept = green;
      return out.result();
    },
  };
}

export const replicasAll = replicaScenario('replicas', undefined, 150, false);
export const replicasFast = replicaScenario('replicas-fast', ['cases', 'placements', 'security', 'inventory'], 40, true);
