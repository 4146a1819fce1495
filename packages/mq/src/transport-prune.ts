import { LOCK_KEYS, sessionWalCompressor, withDedicatedSession, type Sql, type WalCompressionMethod } from '@craig/db';
import pino, { type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { assertWindows, type RetentionWindows } from './internal/horizon.ts';
import { mqMetrics } from './metrics.ts';
import { latchPrune, readPruneLatches, type PruneLatch } from './prune-latch.ts';
import { definePruneTarget, pruneTable, PRUNE_BATCH, PRUNE_CYCLE_CAP, PRUNE_MAX_BATCH, PRUNE_TARGET_BATCH_MS, type PruneBatch, type PruneTarget } from './prune-table.ts';

/** The two tables of the transport sweep, in the order they are pruned. */
export const TRANSPORT_TABLES = ['event_outbox', 'event_inbox'] as const;
export type TransportTable = (typeof TRANSPORT_TABLES)[number];

export function isTransportTable(name: string): name is TransportTable {
  return (TRANSPORT_TABLES as readonly string[]).includes(name);
}

/** Published outbox rows past the window (seed 000 D-B: never pending, never parked). */
export function outboxPruneTarget(days: number): PruneTarget {
  return definePruneTarget({
    table: 'event_outbox',
    orderBy: 'created_at',
    eligible: (sql) => sql`published_at is not null and created_at < now() - make_interval(days => ${days})`,
  });
}

/** Inbox dedup records past the window. */
export function inboxPruneTarget(days: number): PruneTarget {
  return definePruneTarget({
    table: 'event_inbox',
    orderBy: 'received_at',
    eligible: (sql) => sql`received_at < now() - make_interval(days => ${days})`,
  });
}

/** How the sweep compresses its full-page images unless told otherwise (ADR-069). */
export const DEFAULT_PRUNE_WAL_COMPRESSION: WalCompressionMethod = 'lz4';

/** Applies the sweep's `wal_compression`; a refusal is logged once per process, not once per cycle. */
const compressPruneWal = sessionWalCompressor('event retention prune');

export interface PruneCycleOptions {
  /** The service's database; the cycle opens a dedicated session on it for the advisory lock. */
  readonly databaseUrl: string;
  readonly service: string;
  readonly retention: RetentionWindows;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** Checked between batches: an abort stops the cycle after the batch in flight. */
  readonly signal?: AbortSignal;
  /** Rows per statement; default 5,000: the first and smallest batch when adaptive. */
  readonly batchSize?: number;
  /**
   * Batches adapt their size to a latency target (ADR-064, ADR-065, ADR-069): default on, 60 ms per batch, up to
   * 50,000 rows. `false` keeps every batch at `batchSize`.
   */
  readonly adaptive?: false | { readonly targetBatchMs?: number; readonly maxBatchSize?: number };
  /** Rows per table per cycle before the sweep stops and latches; default 1,000,000. */
  readonly cap?: number;
  /** Server-side lock wait per statement on the prune session (default 5 s): a sweep gives way rather than queue. */
  readonly lockTimeoutMs?: number;
  /** After each batch (awaited): progress reporting, and a seam for tests. */
  readonly onBatch?: (table: TransportTable, batch: PruneBatch) => unknown;
  /**
   * Compress the full-page images of the sweep's own deletes (`wal_compression` on its session,
   * ADR-069): default `'lz4'`; `false` leaves the server's setting. A server that compresses
   * already keeps its method; a role without `SET ON PARAMETER wal_compression` sweeps
   * uncompressed and says so once per process.
   */
  readonly walCompression?: WalCompressionMethod | false;
}

export type TablePruneStatus =
  /** Swept everything eligible. */
  | 'pruned'
  /** Its window is 0. */
  | 'disabled'
  /** Latched by an earlier capped cycle: not touched until resumed. */
  | 'latched'
  /** Hit the cap in this cycle and latched. */
  | 'capped'
  | 'aborted'
  /** The cycle stopped before reaching it. */
  | 'not_reached';

export interface TablePruneResult {
  readonly table: TransportTable;
  readonly status: TablePruneStatus;
  readonly deleted: number;
  readonly batches: number;
  readonly latch?: PruneLatch;
}

export interface PruneCycleResult {
  readonly outboxDeleted: number;
  readonly inboxDeleted: number;
  /** Another session holds the prune lock: this cycle did nothing. */
  readonly skipped: boolean;
  readonly aborted: boolean;
  readonly tables: readonly TablePruneResult[];
  readonly ms: number;
  /** `wal_compression` on the sweep's session ('off': not compressed), when the cycle ran. */
  readonly walCompression?: string;
}

/**
 * One transport prune cycle (seed 000 Step 3): on a dedicated session holding
 * `pg_try_advisory_lock(transportPrune)` (not got: skip the cycle), prune `event_outbox`
 * THEN `event_inbox`, each with {@link pruneTable}, each capped and latched independently.
 * Batches start at 5,000 rows and adapt to a 60 ms latency target (ADR-064, ADR-065, ADR-069);
 * the session compresses its full-page images (`walCompression`).
 * The session is closed on every path, so the lock can never strand on a pooled connection.
 * Counts rows per batch into `event_rows_pruned_total{table}`, so the counter is exact even
 * when a cycle fails midway, and logs one line per cycle.
 */
export async function pruneTransportTables(options: PruneCycleOptions): Promise<PruneCycleResult> {
  assertWindows(options.retention);
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.registry ? mqMetrics(options.registry) : undefined;
  const cap = options.cap ?? PRUNE_CYCLE_CAP;
  const started = performance.now();
  const tables: TablePruneResult[] = [];
  let skipped = false;
  let walCompression: string | undefined;
  try {
    await withDedicatedSession(
      options.databaseUrl,
      async (session) => {
        if (!(await session.tryAdvisoryLock(LOCK_KEYS.transportPrune))) {
          skipped = true;
          return;
        }
        // A batch whose commit is lost to a server crash only brings its rows back, still
        // eligible, for the next cycle: the batches need not wait for their WAL flush. (The
        // latch, which must survive a crash, commits synchronously: see latchPrune.)
        await session.sql`set synchronous_commit = off`;
        // Most of a sweep's WAL is full-page images; compressed, it writes a fraction of the
        // WAL, which is what a concurrent writer's commits wait behind (ADR-069).
        const wal = await compressPruneWal(session.sql, options.walCompression ?? DEFAULT_PRUNE_WAL_COMPRESSION, logger);
        walCompression = wal.setting;
        const latches = await readPruneLatches(session.sql);
        // ORDER IS LOAD-BEARING: outbox before inbox, never in one transaction. A cycle that
        // fails between the two leaves (outbox pruned, inbox kept): every dedup record still
        // outlives the outbox row that could redeliver its event (seed 000 §D3.1).
        const plan: ReadonlyArray<readonly [TransportTable, number, (days: number) => PruneTarget]> = [
          ['event_outbox', options.retention.outboxDays, outboxPruneTarget],
          ['event_inbox', options.retention.inboxDays, inboxPruneTarget],
        ];
        for (const [table, days, target] of plan) {
          if (session.signal.aborted) {
            tables.push({ table, status: 'not_reached', deleted: 0, batches: 0 });
            continue;
          }
          const latch = latches.get(table);
          metrics?.pruneCapLatched.set({ table }, latch ? 1 : 0);
          if (days === 0) {
            tables.push({ table, status: 'disabled', deleted: 0, batches: 0, ...(latch ? { latch } : {}) });
            continue;
          }
          if (latch) {
            tables.push({ table, status: 'latched', deleted: 0, batches: 0, latch });
            continue;
          }
          const run = await pruneTable(session.sql, target(days), {
            batchSize: options.batchSize ?? PRUNE_BATCH,
            ...(options.adaptive === false
              ? {}
              : { targetBatchMs: options.adaptive?.targetBatchMs ?? PRUNE_TARGET_BATCH_MS, maxBatchSize: options.adaptive?.maxBatchSize ?? Math.max(PRUNE_MAX_BATCH, options.batchSize ?? PRUNE_BATCH) }),
            cap,
            signal: session.signal,
            onBatch: async (batch) => {
              metrics?.rowsPruned.inc({ table }, batch.deleted);
              await options.onBatch?.(table, batch);
            },
          });
          if (run.capped) {
            const latched = await latchPrune(session.sql, table, { deleted: run.deleted, cap });
            metrics?.pruneCapLatched.set({ table }, 1);
            tables.push({ table, status: 'capped', deleted: run.deleted, batches: run.batches, latch: latched });
          } else {
            tables.push({ table, status: run.aborted ? 'aborted' : 'pruned', deleted: run.deleted, batches: run.batches });
          }
        }
      },
      {
        service: `${options.service}:prune`,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.lockTimeoutMs !== undefined ? { lockTimeoutMs: options.lockTimeoutMs } : {}),
      },
    );
  } catch (error) {
    // withDedicatedSession rethrows the caller's abort after a clean return: that is an
    // aborted cycle, not a failed one. Anything else is a failure (logged, then rethrown).
    if (!(options.signal?.aborted && error === options.signal.reason)) {
      logger.warn({ err: error, tables: summary(tables), ms: Math.round(performance.now() - started) }, 'event retention prune cycle failed');
      throw error;
    }
  }
  const ms = Math.round(performance.now() - started);
  const result: PruneCycleResult = {
    outboxDeleted: tables.find((t) => t.table === 'event_outbox')?.deleted ?? 0,
    inboxDeleted: tables.find((t) => t.table === 'event_inbox')?.deleted ?? 0,
    skipped,
    aborted: tables.some((t) => t.status === 'aborted' || t.status === 'not_reached'),
    tables,
    ms,
    ...(walCompression === undefined ? {} : { walCompression }),
  };
  if (!skipped) metrics?.pruneCycleSeconds.observe(ms / 1000);
  log(logger, options.service, result, cap);
  return result;
}

function summary(tables: readonly TablePruneResult[]): Record<string, string> {
  return Object.fromEntries(tables.map((t) => [t.table, `${t.status}:${t.deleted}`]));
}

function log(logger: Logger, service: string, result: PruneCycleResult, cap: number): void {
  const base = { outboxDeleted: result.outboxDeleted, inboxDeleted: result.inboxDeleted, ms: result.ms, tables: summary(result.tables), ...(result.walCompression ? { walCompression: result.walCompression } : {}) };
  if (result.skipped) {
    logger.info({ ...base, skipped: 'lock held by another pruner' }, 'event retention prune cycle skipped');
    return;
  }
  const held = result.tables.filter((t) => t.status === 'latched' || t.status === 'capped');
  if (held.length > 0) {
    logger.warn(
      {
        ...base,
        latched: held.map((t) => ({ table: t.table, since: t.latch?.latchedAt.toISOString(), deletedWhenCapped: t.latch?.deleted ?? t.deleted, cap })),
        resume: held.map((t) => `pnpm xtask prune ${service} --resume ${t.table}`),
      },
      'event retention prune cycle: sweep latched after hitting its cap (a jumped clock?); see docs/runbooks/prune-cap-latched.md',
    );
    return;
  }
  logger.info(base, 'event retention prune cycle');
}

export interface TablePrunePreview {
  readonly table: TransportTable;
  readonly disabled: boolean;
  readonly latch: PruneLatch | undefined;
  /** Eligible rows now, counted up to cap + 1. */
  readonly eligible: number;
  /** What a cycle would delete (0 when disabled or latched). */
  readonly wouldDelete: number;
  /** The cycle would hit the cap and latch. */
  readonly wouldLatch: boolean;
}

/** What a cycle would do now, deleting nothing (`pnpm xtask prune <service> --dry-run`). */
export async function previewTransportPrune(sql: Sql, retention: RetentionWindows, cap: number = PRUNE_CYCLE_CAP): Promise<TablePrunePreview[]> {
  assertWindows(retention);
  const latches = await readPruneLatches(sql);
  const out: TablePrunePreview[] = [];
  for (const [table, days, target] of [
    ['event_outbox', retention.outboxDays, outboxPruneTarget],
    ['event_inbox', retention.inboxDays, inboxPruneTarget],
  ] as const) {
    const latch = latches.get(table);
    if (days === 0) {
      out.push({ table, disabled: true, latch, eligible: 0, wouldDelete: 0, wouldLatch: false });
      continue;
    }
    const t = target(days);
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from (select 1 from ${sql(t.table)} where ${t.eligible(sql)} limit ${cap + 1}) x`;
    const eligible = row!.n;
    const wouldDelete = latch ? 0 : Math.min(eligible, cap);
    out.push({ table, disabled: false, latch, eligible, wouldDelete, wouldLatch: !latch && eligible > cap });
  }
  return out;
}
