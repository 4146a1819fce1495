// `pnpm xtask bench cleanup`: the stepped, fenced prune of seed 004 beside one unbounded DELETE
// of the same rows on a copy of the same database, each with a sync writer upserting into an
// unaffected library of the same server the whole time.
import { DEFAULT_STEP_PAUSE_MS, RUNTIME_ROLE, runToCompletion, status, type StepTimings } from '@craig/cleanup';
import { createClient, type Sql } from '@craig/db';
import { UsageError, writeLine } from '../command.ts';
import { buildFixture, copyDatabase, dropDatabase, warm, WRITER_ITEMS, type Fixture } from './cleanup-fixture.ts';
import { latencyStats, printTable, rate, ratio, writeResult } from './measure.ts';
import type { BenchSuite } from './suite.ts';
import { statsIn, TimedProbe } from './timed-probe.ts';

const WRITER_PAGE = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Window = readonly [number, number];

/** A sync writer: upserts a page of existing items into the unaffected library, through the triggers. */
function syncWriter(sql: Sql, fixture: Fixture): TimedProbe {
  let next = 0;
  return new TimedProbe(
    async () => {
      const ids = Array.from({ length: WRITER_PAGE }, () => `w-${(next++ % WRITER_ITEMS) + 1}`);
      await sql`
        insert into items (server_id, library_id, external_id, title)
        select ${fixture.serverId}, ${fixture.writerLibrary}, x, 'rev ' || ${next} from unnest(${ids}::text[]) as x
        on conflict (server_id, external_id) do update set title = excluded.title, updated_at = now()`;
    },
    { pauseMs: 2, classify: (e) => ((e as { code?: string }).code === '55P03' ? 'nowait' : ((e as { code?: string }).code ?? 'error')) },
  );
}

/**
 * The stepped prune in alternating windows: `activeMs` of back-to-back steps (with `pauseMs`
 * between steps), then `gapMs` with no step running, while one writer runs throughout. The
 * writer's samples from the gaps are its idle baseline, taken under the same background load.
 */
async function runOurs(fixture: Fixture, o: { pauseMs: number; activeMs: number; gapMs: number }) {
  const writerSql = createClient(fixture.url, { service: 'bench-writer', max: 1, role: RUNTIME_ROLE });
  const stepSql = createClient(fixture.url, { service: 'bench-steps', max: 1, role: RUNTIME_ROLE });
  const timings: StepTimings[] = [];
  const active: Window[] = [];
  const idle: Window[] = [];
  try {
    const probe = syncWriter(writerSql, fixture);
    probe.start();
    let mark = performance.now();
    await sleep(o.gapMs);
    idle.push([mark, performance.now()]);
    let steps = 0;
    for (let done = false; !done; ) {
      mark = performance.now();
      while (!done && performance.now() - mark < o.activeMs) {
        done = (await runToCompletion(stepSql, fixture.jobId, { maxSteps: 1, onTimings: (t) => timings.push(t) })).done;
        steps++;
        if (!done && o.pauseMs > 0) await sleep(o.pauseMs);
      }
      active.push([mark, performance.now()]);
      mark = performance.now();
      await sleep(o.gapMs);
      idle.push([mark, performance.now()]);
    }
    await probe.stop();
    const job = await status(stepSql, fixture.jobId);
    const activeMs = active.reduce((n, [a, b]) => n + (b - a), 0);
    return { activeMs, windows: active.length, steps, job, timings, writer: statsIn(probe.samples, active), idle: statsIn(probe.samples, idle) };
  } finally {
    await Promise.all([writerSql.end(), stepSql.end()]);
  }
}

/** One unbounded DELETE on the copy, the writer running before, during and after it. */
async function runCeiling(fixture: Fixture, url: string, idleMs: number) {
  const writerSql = createClient(url, { service: 'bench-writer', max: 1, role: RUNTIME_ROLE });
  // The owner: the runtime role may delete items only through cleanup_step (ADR-063).
  const deleter = createClient(url, { service: 'bench-delete', max: 1, statementTimeoutMs: 0 });
  try {
    const probe = syncWriter(writerSql, fixture);
    probe.start();
    const before: Window = [performance.now(), performance.now() + idleMs];
    await sleep(idleMs);
    const started = performance.now();
    // Today's naive prune: one statement deleting every unseen item, cascading to its history.
    const result = await deleter`
      delete from items i
      where i.library_id = ${fixture.targetLibrary}
        and not exists (select 1 from cleanup_manifest m where m.job_id = ${fixture.jobId} and m.external_id = i.external_id)`;
    const ended = performance.now();
    await sleep(idleMs);
    const after: Window = [ended, performance.now()];
    await probe.stop();
    return { ms: ended - started, deleted: result.count, writer: statsIn(probe.samples, [[started, ended]]), idle: statsIn(probe.samples, [before, after]) };
  } finally {
    await Promise.all([writerSql.end(), deleter.end()]);
  }
}

function phaseProfile(timings: readonly StepTimings[]) {
  const items = timings.filter((t) => t.phase === 'items');
  const keys = ['lockMs', 'discoverMs', 'fenceMs', 'deleteMs', 'recordMs', 'roundTripMs'] as const;
  const total = items.reduce((n, t) => n + t.totalMs, 0);
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const phases = Object.fromEntries(
    keys.map((k) => {
      const sum = items.reduce((n, t) => n + t[k], 0);
      return [k.replace(/Ms$/, ''), { meanMs: round(sum / Math.max(1, items.length)), share: round(sum / Math.max(total, 1e-9)) }];
    }),
  );
  return { steps: items.length, step: latencyStats(items.map((t) => t.totalMs)), phases };
}

function intOption(options: ReadonlyMap<string, string>, name: string, fallback: number, min: number): number {
  const raw = options.get(name);
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) throw new UsageError(`--${name} must be an integer ≥ ${min}: ${raw}`);
  return value;
}

export const cleanupSuite: BenchSuite = {
  name: 'cleanup',
  summary: 'stepped, fenced prune (seed 004) vs one unbounded DELETE on a copy, with a sync writer on an unaffected library',
  options: ['rows', 'pause-ms', 'active-ms', 'idle-ms'],
  async run(ctx, options) {
    const rows = intOption(options, 'rows', 200_000, 1000);
    // By default the runner's own pacing, so the figures are what the service does.
    const pauseMs = intOption(options, 'pause-ms', DEFAULT_STEP_PAUSE_MS, 0);
    const activeMs = intOption(options, 'active-ms', 500, 50);
    const idleMs = intOption(options, 'idle-ms', 500, 50);
    const log = (line: string) => writeLine(ctx.stderr, `bench cleanup: ${line}`);
    const fixture = await buildFixture(rows, log);
    let copy: { url: string; name: string } | undefined;
    try {
      log(`collected and sealed ${fixture.seen} seen ids in ${Math.round(fixture.collectMs)} ms; copying the database for the baseline`);
      copy = await copyDatabase(fixture);
      await warm(fixture.url);
      await warm(copy.url);
      log(`stepped prune of ${fixture.unseen} unseen items (${activeMs} ms of steps, then ${idleMs} ms without, repeated)`);
      const ours = await runOurs(fixture, { pauseMs, activeMs, gapMs: idleMs });
      if (ours.job.state !== 'completed' || ours.job.counts.deleted !== fixture.unseen) throw new Error(`stepped prune ended ${ours.job.state} with ${ours.job.counts.deleted} deleted, expected ${fixture.unseen}`);
      log('one unbounded DELETE on the copy');
      const ceiling = await runCeiling(fixture, copy.url, Math.max(idleMs, 2000));
      if (ceiling.deleted !== fixture.unseen) throw new Error(`baseline deleted ${ceiling.deleted}, expected ${fixture.unseen}`);

      const oursRate = rate(ours.job.counts.deleted, ours.activeMs);
      const ceilingRate = rate(ceiling.deleted, ceiling.ms);
      const profile = phaseProfile(ours.timings);
      const p99VsIdle = { ours: ratio(ours.writer.p99Ms, ours.idle.p99Ms), ceiling: ratio(ceiling.writer.p99Ms, ceiling.idle.p99Ms) };
      const p95VsIdle = { ours: ratio(ours.writer.p95Ms, ours.idle.p95Ms), ceiling: ratio(ceiling.writer.p95Ms, ceiling.idle.p95Ms) };
      const result = {
        suite: 'cleanup',
        rows,
        unseen: fixture.unseen,
        ours: { itemsPerSec: oursRate, deleted: ours.job.counts.deleted, ms: Math.round(ours.activeMs), steps: ours.steps, windows: ours.windows, pauseMs, counts: ours.job.counts, profile },
        ceiling: { itemsPerSec: ceilingRate, deleted: ceiling.deleted, ms: Math.round(ceiling.ms), statement: 'DELETE FROM items WHERE library_id = $1 AND NOT EXISTS (manifest)' },
        ratio: ratio(oursRate, ceilingRate),
        writer: {
          op: `upsert of ${WRITER_PAGE} items into an unaffected library of the same server (runtime role, admission triggers)`,
          ours: ours.writer,
          idle: ours.idle,
          ceiling: ceiling.writer,
          ceilingIdle: ceiling.idle,
          p99VsIdle,
          p95VsIdle,
        },
        collect: { ids: fixture.seen, ms: Math.round(fixture.collectMs), idsPerSec: rate(fixture.seen, fixture.collectMs) },
        targets: { ratio: 0.1, writerP99VsIdle: 1.5 },
      };
      const path = await writeResult(ctx.root, 'cleanup', result);
      const nowait = (s: { nowaitRejections: number; attempts: number }) => `${s.nowaitRejections}/${s.attempts}`;
      printTable(ctx.stdout, ['writer during', 'items/s', 'ms', 'writer p50', 'p95', 'p99', 'p99 vs idle', 'NOWAIT rejections'], [
        ['idle gaps between step windows', '—', '—', ours.idle.p50Ms, ours.idle.p95Ms, ours.idle.p99Ms, 1, nowait(ours.idle)],
        [`stepped prune (${ours.steps} steps)`, oursRate, Math.round(ours.activeMs), ours.writer.p50Ms, ours.writer.p95Ms, ours.writer.p99Ms, p99VsIdle.ours, nowait(ours.writer)],
        ['idle before/after the DELETE', '—', '—', ceiling.idle.p50Ms, ceiling.idle.p95Ms, ceiling.idle.p99Ms, 1, nowait(ceiling.idle)],
        ['unbounded DELETE (copy)', ceilingRate, Math.round(ceiling.ms), ceiling.writer.p50Ms, ceiling.writer.p95Ms, ceiling.writer.p99Ms, p99VsIdle.ceiling, nowait(ceiling.writer)],
      ]);
      writeLine(ctx.stdout, `\nratio (ours / unbounded DELETE items/s): ${result.ratio}  (target ≥ 0.1); writer p99 vs idle: ${p99VsIdle.ours} (target ≤ 1.5)`);
      writeLine(ctx.stdout, `per items-step (${profile.steps} steps, p50 ${profile.step.p50Ms} ms, p99 ${profile.step.p99Ms} ms):`);
      printTable(ctx.stdout, ['phase', 'mean ms', 'share'], Object.entries(profile.phases).map(([k, v]) => [k, v.meanMs, v.share]));
      writeLine(ctx.stdout, `\nwrote ${path}`);
    } finally {
      if (copy) await dropDatabase(copy.name);
      await dropDatabase(fixture.name);
    }
  },
};
