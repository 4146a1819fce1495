// `pnpm xtask bench prune`: the transport prune cycle against one unbatched DELETE of the same
// rows, on identical copies of one outbox, in alternating rounds, each with a single-row writer
// beside it; then our loop alone at each --scale size (per-batch and per-row cost).
import { createClient, type Sql } from '@craig/db';
import type { WalCompressionMethod } from '@craig/db';
import { outboxPruneTarget, pruneTable, pruneTransportTables, PRUNE_MAX_BATCH, PRUNE_TARGET_BATCH_MS } from '@craig/mq';
import type { TestDatabase } from '@craig/testkit';
import { UsageError, writeLine } from '../command.ts';
import { outboxCopy, outboxWriter, walPosition, warm } from './fixtures.ts';
import { hotOutboxCeiling, outboxOption, type BenchOutbox } from './hot-outbox.ts';
import { latencyStats, pooledP99, printTable, rate, ratio, writeResult, type LatencyStats } from './measure.ts';
import { alternate, machineInfo, roundsOption, runRecord, scalingRounds, spread, walCompressionOption } from './rounds.ts';
import type { BenchSuite } from './suite.ts';

const WINDOW_DAYS = 30;

interface RunResult {
  readonly deleted: number;
  readonly ms: number;
  readonly rowsPerSec: number;
  readonly walBytes: number;
  readonly batches?: LatencyStats & { readonly meanRows: number; readonly msPer1000Rows: number; readonly lateMsPer1000Rows: number };
  readonly writer?: LatencyStats & { failures: Record<string, number> };
  /** The writer's latencies (ms), for the p99 pooled over rounds; not written to the JSON. */
  readonly writerLatencies?: readonly number[];
}

/** `--batch N`: fixed batches of N rows; default: adaptive from 5,000 under the 60 ms target. */
interface BatchChoice {
  readonly size: number;
  readonly adaptive: false | { readonly targetBatchMs: number; readonly maxBatchSize: number };
}

/** Time `body` on a warm copy (after a checkpoint), with the writer beside it when asked. */
export async function timed(db: TestDatabase, withWriter: boolean, body: (batchMs: number[], batchRows: number[]) => Promise<number>, writerTable?: string): Promise<RunResult> {
  await warm(db.sql, writerTable);
  const probe = withWriter ? outboxWriter(db.url, writerTable) : undefined;
  const walAt = await walPosition(db.sql);
  const batchMs: number[] = [];
  const batchRows: number[] = [];
  await probe?.start();
  const started = performance.now();
  const deleted = await body(batchMs, batchRows);
  const ms = performance.now() - started;
  const writer = await probe?.stop();
  return {
    deleted,
    ms: Math.round(ms),
    rowsPerSec: rate(deleted, ms),
    walBytes: (await walPosition(db.sql)) - walAt,
    ...(batchMs.length ? { batches: batchStats(batchMs, batchRows) } : {}),
    ...(writer ? { writer: writer.stats, writerLatencies: writer.samplesMs } : {}),
  };
}

/**
 * Batch latency and per-row cost: over the whole run, and over its late half (the batches that
 * start once half the run's rows are gone). A new session's first pass over the shared buffers
 * maps each of their pages with a page fault of its own, a cost fixed per session, not per row
 * (~1 s for 128 MB of shared_buffers on this kind of machine, ADR-074): the late half shows
 * the per-row cost without it, as a long-lived session sees it.
 */
function batchStats(batchMs: readonly number[], batchRows: readonly number[]) {
  const rows = batchRows.reduce((a, b) => a + b, 0);
  const ms = batchMs.reduce((a, b) => a + b, 0);
  let done = 0;
  let lateRows = 0;
  let lateMs = 0;
  batchRows.forEach((n, i) => {
    if (done >= rows / 2) {
      lateRows += n;
      lateMs += batchMs[i]!;
    }
    done += n;
  });
  const per1000 = (m: number, r: number) => Math.round((m / Math.max(1, r)) * 1e6) / 1000;
  return { ...latencyStats(batchMs), meanRows: Math.round(rows / Math.max(1, batchRows.length)), msPer1000Rows: per1000(ms, rows), lateMsPer1000Rows: per1000(lateMs, lateRows) };
}

/** Ours: the real transport prune cycle (dedicated session, lock, key-range batches), uncapped. */
const ours = (db: TestDatabase, batch: BatchChoice, withWriter: boolean, walCompression: WalCompressionMethod | false) =>
  timed(db, withWriter, async (batchMs, batchRows) => {
    const r = await pruneTransportTables({
      databaseUrl: db.url,
      service: 'bench',
      retention: { outboxDays: WINDOW_DAYS, inboxDays: WINDOW_DAYS + 1 },
      batchSize: batch.size,
      adaptive: batch.adaptive,
      cap: Number.MAX_SAFE_INTEGER,
      walCompression,
      onBatch: (_t, b) => {
        batchMs.push(b.ms);
        batchRows.push(b.deleted);
      },
    });
    return r.outboxDeleted;
  });

/** The throughput ceiling: one unbatched DELETE of everything eligible. */
const ceiling = (db: TestDatabase, withWriter: boolean) =>
  timed(db, withWriter, async () => {
    const sql = createClient(db.url, { service: 'bench-ceiling', max: 1, statementTimeoutMs: 0 });
    try {
      const r = await sql`delete from event_outbox where published_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS})`;
      return r.count;
    } finally {
      await sql.end();
    }
  });

/** For comparison: the same loop keyed by id (a primary-key lookup per row) instead of ctid. */
const idKeyed = (db: TestDatabase, batchSize: number) =>
  timed(db, false, async (batchMs, batchRows) => {
    const sql: Sql = createClient(db.url, { service: 'bench-idkeyed', max: 1 });
    let total = 0;
    try {
      for (;;) {
        const t = performance.now();
        const r = await sql`
          delete from event_outbox
          where id = any(array(
              select id from event_outbox
              where published_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS})
              order by created_at limit ${batchSize}))
            and published_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS})`;
        batchMs.push(performance.now() - t);
        batchRows.push(r.count);
        total += r.count;
        if (r.count < batchSize) return total;
      }
    } finally {
      await sql.end();
    }
  });

/** For the index decision: our loop without the (created_at) partial index, first 20 batches only. */
const noIndex = (db: TestDatabase, batchSize: number) =>
  timed(db, false, async (batchMs, batchRows) => {
    await db.sql`drop index event_outbox_prune`;
    const sql: Sql = createClient(db.url, { service: 'bench-noindex', max: 1, statementTimeoutMs: 0 });
    try {
      const r = await pruneTable(sql, outboxPruneTarget(WINDOW_DAYS), {
        batchSize,
        cap: batchSize * 20,
        onBatch: (b) => {
          batchMs.push(b.ms);
          batchRows.push(b.deleted);
        },
      });
      return r.deleted;
    } finally {
      await sql.end();
    }
  });

export async function withCopy<T>(rows: number, fn: (db: TestDatabase) => Promise<T>, outbox: BenchOutbox = 'shipped'): Promise<T> {
  const db = await outboxCopy(rows);
  try {
    if (outbox === 'hot-ceiling') await hotOutboxCeiling(db.sql, { relayout: true });
    return await fn(db);
  } finally {
    await db.drop();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const pruneSuite: BenchSuite = {
  name: 'prune',
  summary: 'transport prune (key-range batches, adaptive size) vs one unbatched DELETE, alternating rounds, with a concurrent writer',
  options: ['rows', 'batch', 'target-ms', 'scale', 'scale-rounds', 'variants', 'idle-seconds', 'rounds', 'wal-compression', 'outbox'],
  async run(ctx, options) {
    const rows = Number(options.get('rows') ?? 1_000_000);
    const fixed = options.get('batch');
    const targetMs = Number(options.get('target-ms') ?? PRUNE_TARGET_BATCH_MS);
    const scale = (options.get('scale') ?? '1000000,4000000').split(',').filter(Boolean).map(Number);
    const variants = new Set((options.get('variants') ?? '').split(',').filter(Boolean));
    const idleSeconds = Number(options.get('idle-seconds') ?? 3);
    // Each --scale size is measured this many times, the sizes' order alternating round to round:
    // one run a size, smallest first, read the machine's drift as a change of per-row cost.
    const scaleRounds = Number(options.get('scale-rounds') ?? 3);
    const roundCount = roundsOption(options);
    const { text: walOption, method: walCompression } = walCompressionOption(options);
    // ADR-087's HOT outbox ceiling instead of the shipped outbox: a measurement, with no target.
    const outbox = outboxOption(options);
    if (outbox !== 'shipped' && variants.has('noindex')) throw new UsageError(`--variants noindex drops the shipped prune index, which --outbox ${outbox} has not got`);
    for (const [name, n] of [['rows', rows], ['batch', Number(fixed ?? 5000)], ['target-ms', targetMs], ['idle-seconds', idleSeconds], ['scale-rounds', scaleRounds], ...scale.map((s) => ['scale', s] as const)] as const) {
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer: ${n}`);
    }
    if (new Set(scale).size !== scale.length) throw new UsageError(`--scale must not repeat a size: ${scale.join(',')}`);
    const batch: BatchChoice = fixed ? { size: Number(fixed), adaptive: false } : { size: 5000, adaptive: { targetBatchMs: targetMs, maxBatchSize: PRUNE_MAX_BATCH } };
    const log = (line: string) => writeLine(ctx.stderr, `[bench prune] ${line}`);
    const record = runRecord('prune', options, roundCount);

    log(`${rows} rows (the template is built once per size, then copied); ${roundCount} alternating rounds`);
    if (outbox !== 'shipped') log(`outbox: ${outbox} (ADR-087), not the shipped outbox: the figures below are no verdict on the targets`);
    const rounds = await alternate(
      roundCount,
      {
        ours: () =>
          withCopy(
            rows,
            async (db) => {
            // The writer's idle baseline, on the same copy just before the prune.
            const probe = outboxWriter(db.url);
            await warm(db.sql);
            await probe.start();
            await sleep(idleSeconds * 1000);
            const idle = await probe.stop();
            return { idle: idle.stats, idleLatencies: idle.samplesMs, run: await ours(db, batch, true, walCompression) };
            },
            outbox,
          ),
        baseline: () => withCopy(rows, (db) => ceiling(db, true), outbox),
      },
      (r) => {
        if (r.baseline.deleted !== r.ours.run.deleted) throw new Error(`ours deleted ${r.ours.run.deleted} rows, the ceiling ${r.baseline.deleted}: not the same work`);
        log(
          `round ${r.round}/${roundCount} (${r.first} first): ours ${r.ours.run.rowsPerSec} rows/s (batch p99 ${r.ours.run.batches!.p99Ms} ms, mean ${r.ours.run.batches!.meanRows} rows), one DELETE ${r.baseline.rowsPerSec} rows/s, ratio ${ratio(r.ours.run.rowsPerSec, r.baseline.rowsPerSec)}; writer p99 idle ${r.ours.idle.p99Ms} / ours ${r.ours.run.writer!.p99Ms} / DELETE ${r.baseline.writer!.p99Ms} ms`,
        );
      },
    );
    const perRound = rounds.map((r) => ({
      round: r.round,
      first: r.first,
      oursRowsPerSec: r.ours.run.rowsPerSec,
      ceilingRowsPerSec: r.baseline.rowsPerSec,
      ratio: ratio(r.ours.run.rowsPerSec, r.baseline.rowsPerSec),
      batchP50Ms: r.ours.run.batches!.p50Ms,
      batchP99Ms: r.ours.run.batches!.p99Ms,
      batchMeanRows: r.ours.run.batches!.meanRows,
      writerIdleP99Ms: r.ours.idle.p99Ms,
      writerOursP99Ms: r.ours.run.writer!.p99Ms,
      writerCeilingP99Ms: r.baseline.writer!.p99Ms,
      writerP99VsIdle: ratio(r.ours.run.writer!.p99Ms, r.ours.idle.p99Ms),
      walBytes: { ours: r.ours.run.walBytes, ceiling: r.baseline.walBytes },
    }));
    const ratios = spread(perRound.map((r) => r.ratio));

    const extra: Record<string, RunResult> = {};
    if (variants.has('idkeyed')) extra.idKeyed = await withCopy(rows, (db) => idKeyed(db, batch.size), outbox);
    if (variants.has('noindex')) extra.noIndex = await withCopy(rows, (db) => noIndex(db, batch.size));

    const scaled = await scalingRounds(scale, scaleRounds, async (n) => {
      const r = await withCopy(n, (db) => ours(db, batch, false, walCompression), outbox);
      return { rowsPerSec: r.rowsPerSec, batches: r.batches! };
    }, log);
    const scaling = scale.map((n) => {
      const runs = scaled.map((round) => round.get(n)!);
      return {
        rows: n,
        runs: runs.length,
        rowsPerSec: spread(runs.map((r) => r.rowsPerSec)),
        msPer1000Rows: spread(runs.map((r) => r.batches.msPer1000Rows)),
        lateMsPer1000Rows: spread(runs.map((r) => r.batches.lateMsPer1000Rows)),
        batchP50Ms: spread(runs.map((r) => r.batches.p50Ms)),
        batchMeanRows: spread(runs.map((r) => r.batches.meanRows)),
        batchCount: spread(runs.map((r) => r.batches.count)),
      };
    });

    const pooled = { ours: pooledP99(rounds.map((r) => r.ours.run.writerLatencies!)), idle: pooledP99(rounds.map((r) => r.ours.idleLatencies)) };
    const result = {
      ...record.finish(await machineInfo()),
      rowsTable: rows,
      batch: batch.adaptive ? { adaptive: true, first: batch.size, min: batch.size, max: batch.adaptive.maxBatchSize, targetMs: batch.adaptive.targetBatchMs } : { adaptive: false, size: batch.size },
      // Ours only: the ceiling's DELETE runs with the server's setting (off here).
      walCompression: walOption,
      outbox,
      deleted: rounds[0]!.ours.run.deleted,
      ratio: ratios.median,
      ratioSpread: ratios,
      ours: { rowsPerSec: spread(perRound.map((r) => r.oursRowsPerSec)), batchP50Ms: spread(perRound.map((r) => r.batchP50Ms)), batchP99Ms: spread(perRound.map((r) => r.batchP99Ms)), batchMeanRows: spread(perRound.map((r) => r.batchMeanRows)) },
      ceiling: { rowsPerSec: spread(perRound.map((r) => r.ceilingRowsPerSec)) },
      writer: {
        idleP99Ms: spread(perRound.map((r) => r.writerIdleP99Ms)),
        oursP99Ms: spread(perRound.map((r) => r.writerOursP99Ms)),
        ceilingP99Ms: spread(perRound.map((r) => r.writerCeilingP99Ms)),
        oursP99VsIdle: spread(perRound.map((r) => r.writerP99VsIdle)),
        // Every round's samples of each kind together (ADR-079): what the target is judged on.
        pooled: {
          idleP99Ms: pooled.idle,
          oursP99Ms: pooled.ours,
          ceilingP99Ms: pooledP99(rounds.map((r) => r.baseline.writerLatencies!)),
          oursP99VsIdle: ratio(pooled.ours, pooled.idle),
          samples: { ours: rounds.reduce((n, r) => n + r.ours.run.writerLatencies!.length, 0), idle: rounds.reduce((n, r) => n + r.ours.idleLatencies.length, 0) },
        },
      },
      perRound,
      targets: { ratio: 0.8, writerP99VsIdle: 2, flatLateHalf: "median per-row batch cost over each run's late half, at the largest --scale within 0.8–1.25 of the smallest (ADR-074)" },
      ...(Object.keys(extra).length ? { variants: Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { rowsPerSec: v.rowsPerSec, deleted: v.deleted, batches: v.batches, walBytes: v.walBytes }])) } : {}),
      // Cost at the largest size over the smallest, medians over the scaling rounds: per 1,000
      // rows (batches adapt their size, so per-row is the comparable figure) and per batch (p50);
      // flatSpread: the same per-row ratio within each scaling round.
      ...(scaling.length > 1
        ? {
            scaling,
            flat: ratio(scaling.at(-1)!.msPer1000Rows.median, scaling[0]!.msPer1000Rows.median),
            flatSpread: spread(scaled.map((round) => ratio(round.get(scale.at(-1)!)!.batches.msPer1000Rows, round.get(scale[0]!)!.batches.msPer1000Rows))),
            flatLateHalf: ratio(scaling.at(-1)!.lateMsPer1000Rows.median, scaling[0]!.lateMsPer1000Rows.median),
            flatBatchP50: ratio(scaling.at(-1)!.batchP50Ms.median, scaling[0]!.batchP50Ms.median),
          }
        : scaling.length ? { scaling } : {}),
    };

    const s = (x: { median: number; q1: number; q3: number }) => `${x.median} [${x.q1}–${x.q3}]`;
    printTable(
      ctx.stdout,
      ['figure (median [IQR] over rounds)', 'value'],
      [
        ['ours rows/s', s(result.ours.rowsPerSec)],
        ['ours wal_compression (the DELETE: the server\'s)', walOption],
        ['one DELETE rows/s', s(result.ceiling.rowsPerSec)],
        ['ratio ours/DELETE', s(ratios)],
        ['ours batch p50 / p99 ms', `${s(result.ours.batchP50Ms)} / ${s(result.ours.batchP99Ms)}`],
        ['ours rows per batch', s(result.ours.batchMeanRows)],
        ['writer p99 ms: idle / ours / DELETE', `${s(result.writer.idleP99Ms)} / ${s(result.writer.oursP99Ms)} / ${s(result.writer.ceilingP99Ms)}`],
        ['writer p99 ours vs idle', s(result.writer.oursP99VsIdle)],
        ['writer p99 ms pooled over every round\'s samples: idle / ours / DELETE; ours vs idle', `${result.writer.pooled.idleP99Ms} / ${result.writer.pooled.oursP99Ms} / ${result.writer.pooled.ceilingP99Ms}; ${result.writer.pooled.oursP99VsIdle}`],
        ...Object.entries(extra).map(([k, v]) => [`variant ${k} rows/s`, String(v.rowsPerSec)]),
        ...scaling.map((x) => [`ours alone at ${x.rows} rows (${x.runs} runs): rows/s; ms per 1,000 rows, all / late half; batch p50 ms`, `${s(x.rowsPerSec)}; ${s(x.msPer1000Rows)} / ${s(x.lateMsPer1000Rows)}; ${s(x.batchP50Ms)}`]),
      ],
    );
    writeLine(ctx.stdout, `\nratio ours/ceiling: ${ratios.median} (IQR ${ratios.q1}–${ratios.q3}, target >= 0.8); writer p99 ${result.writer.pooled.oursP99VsIdle}x idle, pooled over rounds (target <= 2; median of rounds ${result.writer.oursP99VsIdle.median}x)`);
    if ('flat' in result) {
      writeLine(ctx.stdout, `per-row cost at ${scale.at(-1)} rows / at ${scale[0]} rows, late half of each run: ${result.flatLateHalf} (target 0.8–1.25; flat = 1)`);
      writeLine(ctx.stdout, `  the same over whole runs: ${result.flat} (within a round ${s(result.flatSpread)}); batch p50 ${result.flatBatchP50}`);
    }
    writeLine(ctx.stdout, `load average before ${result.load.before.join(' ')}, after ${result.load.after.join(' ')}; ${result.wallSeconds} s`);
    for (const w of result.warnings) writeLine(ctx.stderr, `[bench prune] WARNING: ${w}`);
    writeLine(ctx.stdout, `wrote ${await writeResult(ctx.root, 'prune', result)}`);
  },
};
