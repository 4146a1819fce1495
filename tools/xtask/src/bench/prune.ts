import { createClient, type Sql } from '@craig/db';
import { outboxPruneTarget, pruneTable, pruneTransportTables } from '@craig/mq';
import type { TestDatabase } from '@craig/testkit';
import { writeLine } from '../command.ts';
import { outboxCopy, walBytesSince, walPosition, warm } from './fixtures.ts';
import { LatencyProbe, latencyStats, printTable, rate, ratio, writeResult, type LatencyStats } from './measure.ts';
import type { BenchSuite } from './suite.ts';

const WINDOW_DAYS = 30;

interface RunResult {
  readonly deleted: number;
  readonly ms: number;
  readonly rowsPerSec: number;
  readonly walBytes: number;
  readonly batches?: LatencyStats;
  readonly writer?: LatencyStats & { failures: Record<string, number> };
}

/** A single-row writer beside the prune: each call is one autocommit INSERT, 5 ms apart. */
function writer(url: string) {
  const sql = createClient(url, { service: 'bench-writer', max: 1 });
  const probe = new LatencyProbe(
    () => sql`insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload) values (gen_random_uuid(), 'case', 'w', 'case.opened', '{"w":1}')`,
    { pauseMs: 5, classify: (e) => String((e as { code?: string }).code ?? 'error') },
  );
  return {
    start: () => probe.start(),
    stop: async () => {
      const stats = await probe.stop();
      await sql.end();
      return stats;
    },
  };
}

async function timed(db: TestDatabase, withWriter: boolean, body: (batchMs: number[]) => Promise<number>): Promise<RunResult> {
  await warm(db.sql);
  const probe = withWriter ? writer(db.url) : undefined;
  const lsn = await walPosition(db.sql);
  const batchMs: number[] = [];
  probe?.start();
  const started = performance.now();
  const deleted = await body(batchMs);
  const ms = performance.now() - started;
  const stats = await probe?.stop();
  return {
    deleted,
    ms: Math.round(ms),
    rowsPerSec: rate(deleted, ms),
    walBytes: await walBytesSince(db.sql, lsn),
    ...(batchMs.length ? { batches: latencyStats(batchMs) } : {}),
    ...(stats ? { writer: stats } : {}),
  };
}

/** Ours: the real transport prune cycle (dedicated session, lock, 5,000-row ctid batches), uncapped. */
const ours = (db: TestDatabase, batchSize: number, withWriter: boolean) =>
  timed(db, withWriter, async (batchMs) => {
    const r = await pruneTransportTables({
      databaseUrl: db.url,
      service: 'bench',
      retention: { outboxDays: WINDOW_DAYS, inboxDays: WINDOW_DAYS + 1 },
      batchSize,
      cap: Number.MAX_SAFE_INTEGER,
      onBatch: (_t, b) => void batchMs.push(b.ms),
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
  timed(db, false, async (batchMs) => {
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
        total += r.count;
        if (r.count < batchSize) return total;
      }
    } finally {
      await sql.end();
    }
  });

/** For the index decision: our loop without the (created_at) partial index, first 20 batches only. */
const noIndex = (db: TestDatabase, batchSize: number) =>
  timed(db, false, async (batchMs) => {
    await db.sql`drop index event_outbox_prune`;
    const sql: Sql = createClient(db.url, { service: 'bench-noindex', max: 1, statementTimeoutMs: 0 });
    try {
      const r = await pruneTable(sql, outboxPruneTarget(WINDOW_DAYS), { batchSize, cap: batchSize * 20, onBatch: (b) => void batchMs.push(b.ms) });
      return r.deleted;
    } finally {
      await sql.end();
    }
  });

async function withCopy<T>(rows: number, fn: (db: TestDatabase) => Promise<T>): Promise<T> {
  const db = await outboxCopy(rows);
  try {
    return await fn(db);
  } finally {
    await db.drop();
  }
}

export const pruneSuite: BenchSuite = {
  name: 'prune',
  summary: 'transport prune (ctid batches) vs one unbatched DELETE, with a concurrent writer',
  options: ['rows', 'batch', 'scale', 'variants', 'idle-seconds', 'rounds'],
  async run(ctx, options) {
    const rows = Number(options.get('rows') ?? 1_000_000);
    const batchSize = Number(options.get('batch') ?? 5000);
    const scale = (options.get('scale') ?? '').split(',').filter(Boolean).map(Number);
    const variants = new Set((options.get('variants') ?? '').split(',').filter(Boolean));
    const idleSeconds = Number(options.get('idle-seconds') ?? 3);
    const roundCount = Number(options.get('rounds') ?? 3);
    for (const [name, n] of [['rows', rows], ['batch', batchSize], ['idle-seconds', idleSeconds], ['rounds', roundCount], ...scale.map((s) => ['scale', s] as const)] as const) {
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    }
    const log = (line: string) => writeLine(ctx.stderr, `[bench prune] ${line}`);

    log(`loading ${rows} rows (built once per size, then copied)`);
    // Rounds alternate which contender goes first; the figures are the medians over rounds, the
    // ratio the median of each round's ratio (the machine is shared and noisy).
    const rounds: Array<{ idle: LatencyStats; ours: RunResult; ceiling: RunResult; ratio: number }> = [];
    for (let round = 0; round < roundCount; round++) {
      const runOurs = () =>
        withCopy(rows, async (db) => {
          const probe = writer(db.url);
          await warm(db.sql);
          probe.start();
          await new Promise((r) => setTimeout(r, idleSeconds * 1000));
          const idle = await probe.stop();
          return { idle, ours: await ours(db, batchSize, true) };
        });
      const runCeiling = () => withCopy(rows, (db) => ceiling(db, true));
      let first: { idle: LatencyStats; ours: RunResult };
      let ceilingRun: RunResult;
      if (round % 2 === 0) {
        first = await runOurs();
        ceilingRun = await runCeiling();
      } else {
        ceilingRun = await runCeiling();
        first = await runOurs();
      }
      if (ceilingRun.deleted !== first.ours.deleted) throw new Error(`ours deleted ${first.ours.deleted} rows, the ceiling ${ceilingRun.deleted}: not the same work`);
      const r = { idle: first.idle, ours: first.ours, ceiling: ceilingRun, ratio: ratio(first.ours.rowsPerSec, ceilingRun.rowsPerSec) };
      log(`round ${round + 1}/${roundCount}: ours ${r.ours.rowsPerSec} rows/s (batch p99 ${r.ours.batches!.p99Ms} ms), one DELETE ${r.ceiling.rowsPerSec} rows/s, ratio ${r.ratio}; writer p99 idle ${r.idle.p99Ms} / ours ${r.ours.writer!.p99Ms} / DELETE ${r.ceiling.writer!.p99Ms} ms`);
      rounds.push(r);
    }
    // The round with the median ratio is reported in full.
    const mid = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)]!;
    const { idle, ours: oursRun, ceiling: ceilingRun } = mid;

    const extra: Record<string, RunResult> = {};
    if (variants.has('idkeyed')) extra.idKeyed = await withCopy(rows, (db) => idKeyed(db, batchSize));
    if (variants.has('noindex')) extra.noIndex = await withCopy(rows, (db) => noIndex(db, batchSize));

    const scaling: Array<{ rows: number; rowsPerSec: number; batches: LatencyStats }> = [];
    for (const n of scale) {
      log(`scaling: ${n} rows`);
      const r = await withCopy(n, (db) => ours(db, batchSize, false));
      scaling.push({ rows: n, rowsPerSec: r.rowsPerSec, batches: r.batches! });
    }

    const result = {
      suite: 'prune',
      rows,
      batchSize,
      deleted: oursRun.deleted,
      ours: { rowsPerSec: oursRun.rowsPerSec, ms: oursRun.ms, p50BatchMs: oursRun.batches!.p50Ms, p99BatchMs: oursRun.batches!.p99Ms, maxBatchMs: oursRun.batches!.maxMs, batches: oursRun.batches!.count, walBytes: oursRun.walBytes },
      ceiling: { rowsPerSec: ceilingRun.rowsPerSec, ms: ceilingRun.ms, walBytes: ceilingRun.walBytes },
      ratio: mid.ratio,
      rounds: rounds.map((r) => ({ oursRowsPerSec: r.ours.rowsPerSec, ceilingRowsPerSec: r.ceiling.rowsPerSec, ratio: r.ratio, p99BatchMs: r.ours.batches!.p99Ms, writerIdleP99Ms: r.idle.p99Ms, writerOursP99Ms: r.ours.writer!.p99Ms, writerCeilingP99Ms: r.ceiling.writer!.p99Ms })),
      writer: { idleP99Ms: idle.p99Ms, oursP99Ms: oursRun.writer!.p99Ms, ceilingP99Ms: ceilingRun.writer!.p99Ms, idle, ours: oursRun.writer, ceiling: ceilingRun.writer },
      ...(Object.keys(extra).length ? { variants: Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, { rowsPerSec: v.rowsPerSec, deleted: v.deleted, batches: v.batches, walBytes: v.walBytes }])) } : {}),
      // Per-batch cost at the largest size over the smallest: p50 (robust to a noisy machine) and mean.
      ...(scaling.length ? { scaling, flat: ratio(scaling.at(-1)!.batches.p50Ms, scaling[0]!.batches.p50Ms), flatMean: ratio(scaling.at(-1)!.batches.meanMs, scaling[0]!.batches.meanMs) } : {}),
    };

    printTable(
      ctx.stdout,
      ['run', 'rows/s', 'batch p50 ms', 'batch p99 ms', 'batch max ms', 'writer p50 ms', 'writer p99 ms', 'writer max ms', 'WAL MB'],
      [
        ['writer idle', '', '', '', '', idle.p50Ms, idle.p99Ms, idle.maxMs, ''],
        ['ours (ctid batches)', oursRun.rowsPerSec, oursRun.batches!.p50Ms, oursRun.batches!.p99Ms, oursRun.batches!.maxMs, oursRun.writer!.p50Ms, oursRun.writer!.p99Ms, oursRun.writer!.maxMs, mb(oursRun.walBytes)],
        ['ceiling (one DELETE)', ceilingRun.rowsPerSec, '', '', '', ceilingRun.writer!.p50Ms, ceilingRun.writer!.p99Ms, ceilingRun.writer!.maxMs, mb(ceilingRun.walBytes)],
        ...Object.entries(extra).map(([k, v]) => [k, v.rowsPerSec, v.batches?.p50Ms ?? '', v.batches?.p99Ms ?? '', v.batches?.maxMs ?? '', '', '', '', mb(v.walBytes)]),
        ...scaling.map((s) => [`ours at ${s.rows} rows`, s.rowsPerSec, s.batches.p50Ms, s.batches.p99Ms, s.batches.maxMs, '', '', '', '']),
      ],
    );
    writeLine(ctx.stdout, `\nratio ours/ceiling: ${result.ratio} (target >= 0.6, goal 0.8); writer p99 ${result.writer.oursP99Ms} ms during ours vs ${result.writer.idleP99Ms} ms idle`);
    if (result.flat !== undefined) writeLine(ctx.stdout, `batch cost at ${scale.at(-1)} rows / at ${scale[0]} rows: p50 ${result.flat}, mean ${result.flatMean} (flat = 1)`);
    writeLine(ctx.stdout, `wrote ${await writeResult(ctx.root, 'prune', result)}`);
  },
};

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
