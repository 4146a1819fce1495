// `pnpm xtask bench cleanup`: the stepped, fenced prune of seed 004 beside one unbounded DELETE
// of the same rows on a copy of the same database, each with a sync writer upserting into an
// unaffected library of the same server the whole time.
import { DEFAULT_STEP_PAUSE_MS, DEFAULT_WINDOW_MS, DEFAULT_WINDOW_STEPS, RUNTIME_ROLE, status, stepWindow, type StepTimings } from '@craig/cleanup';
import { compressSessionWal, createClient, type Sql, type WalCompressionMethod } from '@craig/db';
import { UsageError, writeLine } from '../command.ts';
import { buildFixture, copyDatabase, dropDatabase, warm, WRITER_ITEMS, type Fixture } from './cleanup-fixture.ts';
import { walPosition } from './fixtures.ts';
import { latencyStats, pooledP99, printTable, rate, ratio, writeResult } from './measure.ts';
import { alternate, machineInfo, roundsOption, runRecord, spread, walCompressionOption } from './rounds.ts';
import type { BenchSuite } from './suite.ts';
import { latenciesIn, statsIn } from './timed-probe.ts';
import { startWriter } from './writer.ts';

const WRITER_PAGE = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Window = readonly [number, number];
/** After the busy backend's window, before the DELETE: the writer's commits behind it drain first. */
const QUIET_AFTER_BUSY_MS = 1000;
/** The total length of some windows, in ms. */
const span = (windows: readonly Window[]) => windows.reduce((n, [a, b]) => n + (b - a), 0);

/** WAL written while a contender ran, less what the writer writes at its rate when nothing else runs: bytes per deleted item. */
function walPerItem(w: { activeBytes: number; activeMs: number; idleBytes: number; idleMs: number }, items: number): number {
  const writerShare = w.idleMs > 0 ? (w.idleBytes / w.idleMs) * w.activeMs : 0;
  return Math.round((w.activeBytes - writerShare) / Math.max(1, items));
}

/** The sync writer, in a process of its own: upserts a page of existing items into the unaffected library, through the triggers. */
const syncWriter = (fixture: Fixture, url = fixture.url) =>
  startWriter({ kind: 'items', url, role: RUNTIME_ROLE, serverId: fixture.serverId, libraryId: fixture.writerLibrary, page: WRITER_PAGE, items: WRITER_ITEMS });

/**
 * The stepped prune in alternating windows: `activeMs` of back-to-back steps (with `pauseMs`
 * between steps), then `gapMs` with no step running, while one writer runs throughout. The
 * writer's samples from the gaps are its idle baseline, taken under the same background load.
 */
async function runOurs(fixture: Fixture, o: { pauseMs: number; activeMs: number; gapMs: number; windowSteps: number; windowMs: number; walCompression: WalCompressionMethod | false }) {
  const stepSql = createClient(fixture.url, { service: 'bench-steps', max: 1, role: RUNTIME_ROLE });
  // As the runner's session does (ADR-069); its one connection lives through the run.
  if (o.walCompression !== false) {
    const wal = await compressSessionWal(stepSql, o.walCompression);
    if (wal.setting !== o.walCompression) throw new Error(`the step session runs with wal_compression = ${wal.setting}, not ${o.walCompression}: ${wal.refused ?? 'the server compresses already'}`);
  }
  const timings: StepTimings[] = [];
  const active: Window[] = [];
  const idle: Window[] = [];
  const wal = { activeBytes: 0, idleBytes: 0 };
  try {
    const writer = await syncWriter(fixture);
    let at = await walPosition(stepSql);
    /** Charge the WAL written since the last reading to the window that just ended. */
    const charge = async (to: 'activeBytes' | 'idleBytes') => {
      const now = await walPosition(stepSql);
      wal[to] += now - at;
      at = now;
    };
    let mark = performance.now();
    await sleep(o.gapMs);
    idle.push([mark, performance.now()]);
    await charge('idleBytes');
    let steps = 0;
    let next = (await status(stepSql, fixture.jobId)).nextStep;
    for (let done = false; !done; ) {
      mark = performance.now();
      while (!done && performance.now() - mark < o.activeMs) {
        // What the runner does: one window of steps per transaction, then its pause.
        const results = await stepWindow(stepSql, fixture.jobId, next, { maxSteps: o.windowSteps, maxMs: o.windowMs, onTimings: (t) => timings.push(t) });
        steps += results.length;
        next = results.at(-1)!.stepNo + 1;
        done = results.at(-1)!.done;
        if (!done && o.pauseMs > 0) await sleep(o.pauseMs);
      }
      active.push([mark, performance.now()]);
      await charge('activeBytes');
      mark = performance.now();
      await sleep(o.gapMs);
      idle.push([mark, performance.now()]);
      await charge('idleBytes');
    }
    const samples = await writer.stop();
    const job = await status(stepSql, fixture.jobId);
    const activeMs = span(active);
    return { activeMs, windows: active.length, steps, job, timings, writer: statsIn(samples, active), idle: statsIn(samples, idle), latencies: { writer: latenciesIn(samples, active), idle: latenciesIn(samples, idle) }, wal: { ...wal, activeMs, idleMs: span(idle) } };
  } finally {
    await stepSql.end();
  }
}

/**
 * Keep one backend busy on CPU alone for `ms`: a PL/pgSQL loop in statements of ~30 ms with a
 * round trip between them, about the duty of the runner's windows. It reads no table, writes
 * no WAL and takes no lock, so what it costs the writer is the machine's share of one busy
 * core: the floor any contender that keeps a core busy sets (ADR-076).
 */
async function busyBackend(sql: Sql, ms: number): Promise<Window> {
  const from = performance.now();
  while (performance.now() - from < ms) await sql.unsafe('do $$ declare i integer; begin for i in 1..4000000 loop end loop; end $$');
  return [from, performance.now()];
}

/**
 * One unbounded DELETE on the copy, the writer running before, during and after it. Between
 * the first idle window and the DELETE, one busy backend (see {@link busyBackend}) for `busyMs`,
 * then {@link QUIET_AFTER_BUSY_MS} of quiet before the DELETE starts.
 */
async function runCeiling(fixture: Fixture, url: string, idleMs: number, busyMs: number) {
  // The owner: the runtime role may delete items only through cleanup_step (ADR-063).
  const deleter = createClient(url, { service: 'bench-delete', max: 1, statementTimeoutMs: 0 });
  try {
    const writer = await syncWriter(fixture, url);
    const atStart = await walPosition(deleter);
    const before: Window = [performance.now(), performance.now() + idleMs];
    await sleep(idleMs);
    const atBusy = await walPosition(deleter);
    const busy = await busyBackend(deleter, busyMs);
    await sleep(QUIET_AFTER_BUSY_MS);
    const atDelete = await walPosition(deleter);
    const started = performance.now();
    // Today's naive prune: one statement deleting every unseen item, cascading to its history.
    const result = await deleter`
      delete from items i
      where i.library_id = ${fixture.targetLibrary}
        and not exists (select 1 from cleanup_manifest m where m.job_id = ${fixture.jobId} and m.external_id = i.external_id)`;
    const ended = performance.now();
    const atDeleted = await walPosition(deleter);
    await sleep(idleMs);
    const after: Window = [ended, performance.now()];
    const atEnd = await walPosition(deleter);
    const samples = await writer.stop();
    // The idle windows' WAL only: the busy backend's window and the quiet second after it are left out.
    const wal = { activeBytes: atDeleted - atDelete, activeMs: ended - started, idleBytes: atBusy - atStart + (atEnd - atDeleted), idleMs: span([before, after]) };
    const windows = { writer: [[started, ended]] as const, idle: [before, after], busy: [busy] };
    return {
      ms: ended - started,
      deleted: result.count,
      writer: statsIn(samples, windows.writer),
      idle: statsIn(samples, windows.idle),
      busy: statsIn(samples, windows.busy),
      latencies: { writer: latenciesIn(samples, windows.writer), idle: latenciesIn(samples, windows.idle), busy: latenciesIn(samples, windows.busy) },
      wal,
    };
  } finally {
    await deleter.end();
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
  options: ['rows', 'pause-ms', 'window-steps', 'window-ms', 'active-ms', 'idle-ms', 'busy-ms', 'rounds', 'wal-compression'],
  async run(ctx, options) {
    // 400 k items (200 k unseen): the unbounded DELETE then runs long enough (about a second) for
    // the writer's p99 beside it to rest on several hundred samples, not a few dozen (ADR-070).
    const rows = intOption(options, 'rows', 400_000, 1000);
    // By default the runner's own pacing and windows, so the figures are what the service does.
    const pauseMs = intOption(options, 'pause-ms', DEFAULT_STEP_PAUSE_MS, 0);
    const windowSteps = intOption(options, 'window-steps', DEFAULT_WINDOW_STEPS, 1);
    const windowMs = intOption(options, 'window-ms', DEFAULT_WINDOW_MS, 1);
    const activeMs = intOption(options, 'active-ms', 500, 50);
    const idleMs = intOption(options, 'idle-ms', 500, 50);
    // The busy backend's window in each baseline round: a second or two gives the writer's p99 beside it a few hundred samples.
    const busyMs = intOption(options, 'busy-ms', 2000, 50);
    const roundCount = roundsOption(options);
    const { text: walOption, method: walCompression } = walCompressionOption(options);
    const record = runRecord('cleanup', options, roundCount);
    const log = (line: string) => writeLine(ctx.stderr, `bench cleanup: ${line}`);
    const fixture = await buildFixture(rows, log);
    try {
      log(`collected and sealed ${fixture.seen} seen ids in ${Math.round(fixture.collectMs)} ms; ${roundCount} alternating rounds, each on fresh copies`);
      const rounds = await alternate(
        roundCount,
        {
          ours: () =>
            onCopy(fixture, async (copy) => {
              const f = { ...fixture, url: copy.url };
              await warm(f.url);
              const ours = await runOurs(f, { pauseMs, activeMs, gapMs: idleMs, windowSteps, windowMs, walCompression });
              if (ours.job.state !== 'completed' || ours.job.counts.deleted !== fixture.unseen) throw new Error(`stepped prune ended ${ours.job.state} with ${ours.job.counts.deleted} deleted, expected ${fixture.unseen}`);
              return ours;
            }),
          baseline: () =>
            onCopy(fixture, async (copy) => {
              await warm(copy.url);
              const ceiling = await runCeiling(fixture, copy.url, Math.max(idleMs, 2000), busyMs);
              if (ceiling.deleted !== fixture.unseen) throw new Error(`baseline deleted ${ceiling.deleted}, expected ${fixture.unseen}`);
              return ceiling;
            }),
        },
        (r) =>
          log(
            `round ${r.round}/${roundCount} (${r.first} first): ours ${rate(r.ours.job.counts.deleted, r.ours.activeMs)} items/s (${r.ours.steps} steps), DELETE ${rate(r.baseline.deleted, r.baseline.ms)} items/s; writer p99 ${r.ours.writer.p99Ms} ms vs idle ${r.ours.idle.p99Ms} ms`,
          ),
      );
      const perRound = rounds.map((r) => {
        const o = rate(r.ours.job.counts.deleted, r.ours.activeMs);
        const c = rate(r.baseline.deleted, r.baseline.ms);
        return {
          round: r.round,
          first: r.first,
          oursItemsPerSec: o,
          ceilingItemsPerSec: c,
          ratio: ratio(o, c),
          steps: r.ours.steps,
          writerP99Ms: r.ours.writer.p99Ms,
          writerIdleP99Ms: r.ours.idle.p99Ms,
          writerP99VsIdle: ratio(r.ours.writer.p99Ms, r.ours.idle.p99Ms),
          ceilingWriterP99VsIdle: ratio(r.baseline.writer.p99Ms, r.baseline.idle.p99Ms),
          busyWriterP99VsIdle: ratio(r.baseline.busy.p99Ms, r.baseline.idle.p99Ms),
          nowaitRejections: r.ours.writer.nowaitRejections + r.ours.idle.nowaitRejections,
          oursWalBytesPerItem: walPerItem(r.ours.wal, r.ours.job.counts.deleted),
          ceilingWalBytesPerItem: walPerItem(r.baseline.wal, r.baseline.deleted),
        };
      });
      const ratios = spread(perRound.map((r) => r.ratio));
      const mid = rounds[perRound.indexOf([...perRound].sort((a, b) => a.ratio - b.ratio)[Math.floor(perRound.length / 2)]!)]!;
      const profile = phaseProfile(mid.ours.timings);
      // Every round's samples of a kind together (ADR-079), each pooled once.
      const pooled = {
        steps: pooledP99(rounds.map((r) => r.ours.latencies.writer)),
        idleGaps: pooledP99(rounds.map((r) => r.ours.latencies.idle)),
        ceilingIdle: pooledP99(rounds.map((r) => r.baseline.latencies.idle)),
      };
      const result = {
        ...record.finish(await machineInfo()),
        rowsTable: rows,
        unseen: fixture.unseen,
        ratio: ratios.median,
        ratioSpread: ratios,
        ours: {
          itemsPerSec: spread(perRound.map((r) => r.oursItemsPerSec)),
          steps: mid.ours.steps,
          windows: { maxSteps: windowSteps, maxMs: windowMs, pauseMs },
          // The step session's; the unbounded DELETE runs with the server's (off here).
          walCompression: walOption,
          counts: mid.ours.job.counts,
          // The median round's profile: where a step's time went.
          profile,
        },
        ceiling: { itemsPerSec: spread(perRound.map((r) => r.ceilingItemsPerSec)), statement: 'DELETE FROM items WHERE library_id = $1 AND NOT EXISTS (manifest)' },
        writer: {
          op: `upsert of ${WRITER_PAGE} items into an unaffected library of the same server (runtime role, admission triggers)`,
          oursP99Ms: spread(perRound.map((r) => r.writerP99Ms)),
          idleP99Ms: spread(perRound.map((r) => r.writerIdleP99Ms)),
          p99VsIdle: spread(perRound.map((r) => r.writerP99VsIdle)),
          ceilingP99VsIdle: spread(perRound.map((r) => r.ceilingWriterP99VsIdle)),
          // The machine's floor, not a contender: the writer beside one backend kept busy on CPU
          // alone (no table, no WAL, no lock), against the DELETE round's idle windows.
          busyCoreP99VsIdle: spread(perRound.map((r) => r.busyWriterP99VsIdle)),
          // Every round's samples of each kind together (ADR-079): what the target is judged on.
          pooled: {
            oursP99Ms: pooled.steps,
            idleP99Ms: pooled.idleGaps,
            p99VsIdle: ratio(pooled.steps, pooled.idleGaps),
            ceilingP99VsIdle: ratio(pooledP99(rounds.map((r) => r.baseline.latencies.writer)), pooled.ceilingIdle),
            busyCoreP99VsIdle: ratio(pooledP99(rounds.map((r) => r.baseline.latencies.busy)), pooled.ceilingIdle),
            samples: { steps: rounds.reduce((n, r) => n + r.ours.latencies.writer.length, 0), idleGaps: rounds.reduce((n, r) => n + r.ours.latencies.idle.length, 0) },
          },
          nowaitRejections: perRound.reduce((n, r) => n + r.nowaitRejections, 0),
          ours: mid.ours.writer,
          idle: mid.ours.idle,
          ceiling: mid.baseline.writer,
          ceilingIdle: mid.baseline.idle,
          busyCore: mid.baseline.busy,
        },
        wal: {
          oursBytesPerItem: spread(perRound.map((r) => r.oursWalBytesPerItem)),
          ceilingBytesPerItem: spread(perRound.map((r) => r.ceilingWalBytesPerItem)),
          note: "WAL written while the contender ran, less the writer's WAL at its rate when nothing else ran, per deleted item",
        },
        perRound,
        collect: { ids: fixture.seen, ms: Math.round(fixture.collectMs), idsPerSec: rate(fixture.seen, fixture.collectMs) },
        targets: { ratio: 0.3, writerP99VsIdle: 1.5, stepRowBound: 128 },
      };
      const path = await writeResult(ctx.root, 'cleanup', result);
      const cell = (x: { median: number; q1: number; q3: number }) => `${x.median} [${x.q1}–${x.q3}]`;
      printTable(ctx.stdout, ['figure (median [IQR] over rounds)', 'value'], [
        [`stepped prune items/s (windows of ≤ ${windowSteps} steps / ${windowMs} ms, ${pauseMs} ms pause)`, cell(result.ours.itemsPerSec)],
        ['unbounded DELETE (copy) items/s', cell(result.ceiling.itemsPerSec)],
        ['ratio', cell(ratios)],
        ['writer p99 ms during steps / in the idle gaps', `${cell(result.writer.oursP99Ms)} / ${cell(result.writer.idleP99Ms)}`],
        ['writer p99 vs idle: stepped / DELETE', `${cell(result.writer.p99VsIdle)} / ${cell(result.writer.ceilingP99VsIdle)}`],
        ['writer p99 vs idle beside one busy backend (CPU only: the machine\'s floor)', cell(result.writer.busyCoreP99VsIdle)],
        ['the same three, pooled over every round\'s samples: stepped / DELETE / busy backend', `${result.writer.pooled.p99VsIdle} / ${result.writer.pooled.ceilingP99VsIdle} / ${result.writer.pooled.busyCoreP99VsIdle}`],
        ['NOWAIT rejections of the writer (all rounds)', result.writer.nowaitRejections],
        ["WAL bytes per deleted item, less the writer's: stepped / DELETE", `${cell(result.wal.oursBytesPerItem)} / ${cell(result.wal.ceilingBytesPerItem)}`],
      ]);
      writeLine(ctx.stdout, `\nratio (ours / unbounded DELETE items/s): ${result.ratio}  (target ≥ 0.3); writer p99 vs idle, pooled over rounds: ${result.writer.pooled.p99VsIdle} (target ≤ 1.5; median of rounds ${result.writer.p99VsIdle.median})`);
      writeLine(ctx.stdout, `per items-step in the median round (${profile.steps} steps, p50 ${profile.step.p50Ms} ms, p99 ${profile.step.p99Ms} ms):`);
      printTable(ctx.stdout, ['phase', 'mean ms', 'share'], Object.entries(profile.phases).map(([k, v]) => [k, v.meanMs, v.share]));
      writeLine(ctx.stdout, `load average before ${result.load.before.join(' ')}, after ${result.load.after.join(' ')}; ${result.wallSeconds} s`);
      for (const w of result.warnings) writeLine(ctx.stderr, `bench cleanup: WARNING: ${w}`);
      writeLine(ctx.stdout, `\nwrote ${path}`);
    } finally {
      await dropDatabase(fixture.name);
    }
  },
};

/** Run `fn` on a fresh byte-for-byte copy of the fixture's database, dropped afterwards. */
async function onCopy<T>(fixture: Fixture, fn: (copy: { url: string; name: string }) => Promise<T>): Promise<T> {
  const copy = await copyDatabase(fixture);
  try {
    return await fn(copy);
  } finally {
    await dropDatabase(copy.name);
  }
}
