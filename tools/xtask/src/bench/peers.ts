// `pnpm xtask bench peers`: our transport prune beside how others clean an outbox, on copies of
// the same 1 M-row outbox (90 % aged published, 5 % aged pending, 5 % fresh), in rotating rounds,
// each with a single-row writer inserting into the table being cleaned:
//   - ours: pruneTransportTables (published-only, key-range batches, adaptive size, its session's
//     full-page images compressed with lz4: ADR-069; the others run with the server's setting);
//   - the `id IN (SELECT … LIMIT n)` loop that NServiceBus/CAP-style cleaners run
//     (DELETE … WHERE id IN (SELECT id … WHERE <expired> LIMIT @batch) until a short batch);
//   - pg-transactional-outbox 0.5.7 (npm), `runMessageCleanupOnce` on its own `outbox` table
//     (created by its DatabaseSetup, holding the same rows), with processed messages expiring
//     at our 30-day window and its defaults for the rest (abandoned 14 d, every message 60 d).
// For each: rows/s, the writer's p99 (and its idle p99 on the same copy), and pending rows lost.
import { createClient } from '@craig/db';
import { pruneTransportTables } from '@craig/mq';
import type { TestDatabase } from '@craig/testkit';
import pg from 'pg';
import { runMessageCleanupOnce } from 'pg-transactional-outbox';
import { UsageError, writeLine } from '../command.ts';
import { outboxCopy, outboxWriter, warm } from './fixtures.ts';
import { pooledP99, printTable, rate, ratio, writeResult, type LatencyStats } from './measure.ts';
import { machineInfo, roundsOption, rotate, runRecord, spread, type Spread } from './rounds.ts';
import type { BenchSuite } from './suite.ts';

const WINDOW_DAYS = 30;
const DAY = 86_400;
/** pg-transactional-outbox's own defaults (its ListenerSettings) for abandoned and for every message. */
const PEER_ABANDONED_SECONDS = 14 * DAY;
const PEER_ALL_SECONDS = 60 * DAY;

type Contender = 'ours' | 'idInLoop' | 'pgTransactionalOutbox';
const LABELS: Record<Contender, string> = {
  ours: 'ours: pruneTransportTables (range batches, adaptive, lz4 WAL images)',
  idInLoop: 'id IN (SELECT … LIMIT n) loop (NServiceBus/CAP style)',
  pgTransactionalOutbox: 'pg-transactional-outbox 0.5.7 runMessageCleanupOnce',
};

interface Run {
  /** Rows the contender should delete: published before the window (counted before it ran). */
  readonly eligible: number;
  /** Pending rows created before the peer's catch-all window (60 days): what it deletes unpublished (counted before the run). */
  readonly pendingPastPeerAll: number;
  readonly deleted: number;
  readonly ms: number;
  readonly rowsPerSec: number;
  /** Rows still pending (never published) before the run that are gone after it. */
  readonly pendingLost: number;
  readonly writer: LatencyStats;
  readonly writerIdle: LatencyStats;
}

/** The table each contender cleans, and how its writer inserts a fresh pending row there. */
function tableOf(c: Contender): 'event_outbox' | 'outbox' {
  return c === 'pgTransactionalOutbox' ? 'outbox' : 'event_outbox';
}

async function pendingCount(db: TestDatabase, table: 'event_outbox' | 'outbox', before: Date): Promise<number> {
  const [row] =
    table === 'event_outbox'
      ? await db.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where published_at is null and created_at < ${before}`
      : await db.sql<{ n: number }[]>`select count(*)::int as n from outbox where processed_at is null and created_at < ${before}`;
  return row!.n;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function withoutSamples({ samplesMs: _, ...run }: RunWithSamples): Run {
  return run;
}

/** Published rows past the window, and pending rows past the peer's catch-all window: counted before a run. */
async function expectations(db: TestDatabase, table: 'event_outbox' | 'outbox'): Promise<{ eligible: number; pendingPastPeerAll: number }> {
  const [row] =
    table === 'event_outbox'
      ? await db.sql<{ eligible: number; past: number }[]>`
          select count(*) filter (where published_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS}))::int as eligible,
                 count(*) filter (where published_at is null and created_at < now() - make_interval(secs => ${PEER_ALL_SECONDS}))::int as past
          from event_outbox`
      : await db.sql<{ eligible: number; past: number }[]>`
          select count(*) filter (where processed_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS}))::int as eligible,
                 count(*) filter (where processed_at is null and created_at < now() - make_interval(secs => ${PEER_ALL_SECONDS}))::int as past
          from outbox`;
  return { eligible: row!.eligible, pendingPastPeerAll: row!.past };
}

/** One contender's run, with its writer's latencies (ms) beside it and at idle, for the pooled p99 over rounds. */
type RunWithSamples = Run & { readonly samplesMs: { readonly writer: readonly number[]; readonly idle: readonly number[] } };

async function runOne(rows: number, c: Contender, batch: number, idleSeconds: number): Promise<RunWithSamples> {
  const db = await outboxCopy(rows, { peer: true });
  try {
    const table = tableOf(c);
    await warm(db.sql, table);
    const expected = await expectations(db, table);
    const cutoff = new Date();
    const pendingBefore = await pendingCount(db, table, cutoff);
    const idleProbe = outboxWriter(db.url, table);
    await idleProbe.start();
    await sleep(idleSeconds * 1000);
    const idle = await idleProbe.stop();
    const probe = outboxWriter(db.url, table);
    await probe.start();
    const started = performance.now();
    const deleted = await clean(db, c, batch);
    const ms = performance.now() - started;
    const w = await probe.stop();
    const pendingLost = pendingBefore - (await pendingCount(db, table, cutoff));
    return { ...expected, deleted, ms: Math.round(ms), rowsPerSec: rate(deleted, ms), pendingLost, writer: w.stats, writerIdle: idle.stats, samplesMs: { writer: w.samplesMs, idle: idle.samplesMs } };
  } finally {
    await db.drop();
  }
}

async function clean(db: TestDatabase, c: Contender, batch: number): Promise<number> {
  if (c === 'ours') {
    const r = await pruneTransportTables({ databaseUrl: db.url, service: 'bench', retention: { outboxDays: WINDOW_DAYS, inboxDays: WINDOW_DAYS + 1 }, cap: Number.MAX_SAFE_INTEGER });
    return r.outboxDeleted;
  }
  if (c === 'idInLoop') {
    // What CAP's and NServiceBus's cleaners send, batch after batch: no ORDER BY, no re-check,
    // the batch size a parameter (so the driver's prepared generic plan is what runs).
    const sql = createClient(db.url, { service: 'bench-id-in-loop', max: 1, statementTimeoutMs: 0 });
    let total = 0;
    try {
      for (;;) {
        const r = await sql`
          delete from event_outbox where id in (
            select id from event_outbox
            where published_at is not null and created_at < now() - make_interval(days => ${WINDOW_DAYS})
            limit ${batch})`;
        total += r.count;
        if (r.count < batch) return total;
      }
    } finally {
      await sql.end();
    }
  }
  // The library's own cleanup, called through its exported API on a node-postgres pool.
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  try {
    return await runMessageCleanupOnce(pool, {
      settings: {
        dbSchema: 'public',
        dbTable: 'outbox',
        messageCleanupProcessedInSec: WINDOW_DAYS * DAY,
        messageCleanupAbandonedInSec: PEER_ABANDONED_SECONDS,
        messageCleanupAllInSec: PEER_ALL_SECONDS,
      },
    } as Parameters<typeof runMessageCleanupOnce>[1]);
  } finally {
    await pool.end();
  }
}

export const peersSuite: BenchSuite = {
  name: 'peers',
  summary: 'ours beside the id IN (SELECT … LIMIT n) loop and pg-transactional-outbox, on the same outbox: rows/s, writer p99, pending rows lost',
  options: ['rows', 'batch', 'idle-seconds', 'rounds'],
  async run(ctx, options) {
    const rows = Number(options.get('rows') ?? 1_000_000);
    const batch = Number(options.get('batch') ?? 5000);
    const idleSeconds = Number(options.get('idle-seconds') ?? 2);
    for (const [name, n] of [['rows', rows], ['batch', batch], ['idle-seconds', idleSeconds]] as const) {
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer: ${n}`);
    }
    const roundCount = roundsOption(options);
    const record = runRecord('peers', options, roundCount);
    const log = (line: string) => writeLine(ctx.stderr, `[bench peers] ${line}`);
    log(`${rows}-row outbox (template built once, then copied per run); ${roundCount} rotating rounds`);
    const contenders = (['ours', 'idInLoop', 'pgTransactionalOutbox'] as const).map((c) => [c, () => runOne(rows, c, batch, idleSeconds)] as const);
    const rounds = await rotate(roundCount, contenders, (round, name, r) =>
      log(`round ${round}/${roundCount} ${name}: ${r.deleted} rows in ${r.ms} ms (${r.rowsPerSec} rows/s), writer p99 ${r.writer.p99Ms} ms (idle ${r.writerIdle.p99Ms}), pending lost ${r.pendingLost}`),
    );

    const summary = (c: Contender) => {
      const runs = rounds.map((r) => r[c]);
      return {
        label: LABELS[c],
        deleted: spread(runs.map((r) => r.deleted)),
        rowsPerSec: spread(runs.map((r) => r.rowsPerSec)),
        writerP99Ms: spread(runs.map((r) => r.writer.p99Ms)),
        writerIdleP99Ms: spread(runs.map((r) => r.writerIdle.p99Ms)),
        writerP99VsIdle: spread(runs.map((r) => ratio(r.writer.p99Ms, r.writerIdle.p99Ms))),
        pendingLost: spread(runs.map((r) => r.pendingLost)),
        // Every round's samples together: a p99 of hundreds of samples per round is decided by
        // its 3–6 slowest; the pooled one by its 15–30 slowest, and both sides of a comparison
        // count all of their rounds (ours runs half as long as the loop, so it has half the samples).
        pooled: {
          writerSamples: runs.reduce((n, r) => n + r.samplesMs.writer.length, 0),
          writerP99Ms: pooledP99(runs.map((r) => r.samplesMs.writer)),
          writerIdleP99Ms: pooledP99(runs.map((r) => r.samplesMs.idle)),
        },
      };
    };
    const contendersOut = { ours: summary('ours'), idInLoop: summary('idInLoop'), pgTransactionalOutbox: summary('pgTransactionalOutbox') };
    // Per round, ours against each peer: the comparisons the issue asks for.
    const vs = (peer: Contender) => ({
      throughput: spread(rounds.map((r) => ratio(r.ours.rowsPerSec, r[peer].rowsPerSec))),
      writerP99: spread(rounds.map((r) => ratio(r.ours.writer.p99Ms, r[peer].writer.p99Ms))),
      writerP99Pooled: ratio(contendersOut.ours.pooled.writerP99Ms, contendersOut[peer].pooled.writerP99Ms),
    });
    const oursVs = { idInLoop: vs('idInLoop'), pgTransactionalOutbox: vs('pgTransactionalOutbox') };
    const result = {
      ...record.finish(await machineInfo()),
      rowsTable: rows,
      batch,
      window: { processedDays: WINDOW_DAYS, peerAbandonedDays: PEER_ABANDONED_SECONDS / DAY, peerAllDays: PEER_ALL_SECONDS / DAY },
      contenders: contendersOut,
      // ours / peer per round: > 1 means ours is faster; writerP99 < 1 means ours disturbs the writer less.
      oursVs,
      ratio: oursVs.idInLoop.throughput.median,
      // What the issue asks of ours against the loop (ADR-079: writer p99s are compared pooled).
      verdict: {
        losesNoPendingRow: contendersOut.ours.pendingLost.max === 0,
        fasterThanTheLoop: oursVs.idInLoop.throughput.median > 1,
        gentlerOnTheWriterThanTheLoop: oursVs.idInLoop.writerP99Pooled < 1,
      },
      perRound: rounds.map((r) => ({ round: r.round, order: r.order, ours: withoutSamples(r.ours), idInLoop: withoutSamples(r.idInLoop), pgTransactionalOutbox: withoutSamples(r.pgTransactionalOutbox) })),
      notes: [
        'pg-transactional-outbox deletes in one statement every message created more than 60 days ago (its messageCleanupAllInSec default), processed or not: the pending rows it loses.',
        'its table is its own (public.outbox from its DatabaseSetup, with its polling indexes), holding the same rows; ours and the loop clean event_outbox.',
      ],
    };
    const cell = (x: Spread) => `${x.median} [${x.q1}–${x.q3}]`;
    printTable(
      ctx.stdout,
      ['contender (median [IQR] over rounds)', 'rows/s', 'writer p99 ms', 'idle p99 ms', 'p99 vs idle', 'pending rows lost'],
      (Object.keys(contendersOut) as Contender[]).map((c) => {
        const s = contendersOut[c];
        return [s.label, cell(s.rowsPerSec), cell(s.writerP99Ms), cell(s.writerIdleP99Ms), cell(s.writerP99VsIdle), cell(s.pendingLost)];
      }),
    );
    writeLine(ctx.stdout, `\nwriter p99 over every round's samples together (pooled): ${(Object.keys(contendersOut) as Contender[]).map((c) => `${c} ${contendersOut[c].pooled.writerP99Ms} ms of ${contendersOut[c].pooled.writerSamples} (idle ${contendersOut[c].pooled.writerIdleP99Ms})`).join('; ')}`);
    writeLine(ctx.stdout, `ours / the id IN loop: throughput ${cell(result.oursVs.idInLoop.throughput)}, writer p99 ${cell(result.oursVs.idInLoop.writerP99)}, pooled ${result.oursVs.idInLoop.writerP99Pooled} (ours must be > 1 and < 1)`);
    const v = result.verdict;
    writeLine(ctx.stdout, `ours against the loop: ${v.losesNoPendingRow ? 'loses no pending row' : 'LOSES PENDING ROWS'}; ${v.fasterThanTheLoop ? 'faster' : 'NOT faster'}; ${v.gentlerOnTheWriterThanTheLoop ? 'a lower' : 'NOT a lower'} pooled writer p99`);
    writeLine(ctx.stdout, `ours / pg-transactional-outbox: throughput ${cell(result.oursVs.pgTransactionalOutbox.throughput)}, writer p99 ${cell(result.oursVs.pgTransactionalOutbox.writerP99)}, pooled ${result.oursVs.pgTransactionalOutbox.writerP99Pooled}`);
    writeLine(ctx.stdout, `load average before ${result.load.before.join(' ')}, after ${result.load.after.join(' ')}; ${result.wallSeconds} s`);
    for (const w of result.warnings) writeLine(ctx.stderr, `[bench peers] WARNING: ${w}`);
    writeLine(ctx.stdout, `wrote ${await writeResult(ctx.root, 'peers', result)}`);
  },
};
