import { LOCK_KEYS, withDedicatedSession, type Sql } from '@craig/db';
import {
  defineRetentionSpec,
  definePruneTarget,
  latchPrune,
  mqMetrics,
  pruneTable,
  readPruneLatches,
  PRUNE_BATCH,
  PRUNE_CYCLE_CAP,
  type PruneBatch,
  type PruneLatch,
  type PruneTarget,
  type RetentionSpec,
} from '@craig/mq';
import pino, { type Logger } from 'pino';
import type { Registry } from 'prom-client';

/** The swept table, and the sweep's name in `prune_latch` and `event_rows_pruned_total{table}`. */
export const RECONCILE_SWEEP_TARGET = 'subsidy_reconcile_queue';

/**
 * Settled rows whose `settled_at` is older than the window, by the database's clock. Settled is
 * terminal, so a row that matches stays matching; the delete re-checks the whole predicate anyway.
 */
export function settledPruneTarget(days: number): PruneTarget {
  assertDays(days);
  return definePruneTarget({
    table: RECONCILE_SWEEP_TARGET,
    orderBy: 'settled_at',
    eligible: (sql) => sql`status = 'settled' and settled_at < now() - make_interval(days => ${days})`,
  });
}

/**
 * `subsidy_reconcile_queue_retention_overrun` (report-only, `pnpm xtask invariants financial`):
 * settled rows older than the window + 48 h. Red means the sweep is not running, is latched, or
 * cannot keep up. Pending, matched and failed rows are never overdue.
 */
export function reconcileRetentionSpecs(days: number): RetentionSpec[] {
  return [
    defineRetentionSpec({
      name: 'subsidy_reconcile_queue_retention_overrun',
      table: RECONCILE_SWEEP_TARGET,
      column: 'settled_at',
      windowDays: days,
      eligible: (sql) => sql`t.status = 'settled'`,
    }),
  ];
}

export type SweepStatus =
  /** Deleted everything eligible. */
  | 'pruned'
  /** RECONCILE_SETTLED_RETENTION_DAYS is 0. */
  | 'disabled'
  /** Another session holds the sweep lock: nothing was done. */
  | 'skipped'
  /** Latched by an earlier capped cycle: nothing deleted until an operator resumes it. */
  | 'latched'
  /** Hit the cap in this cycle, and latched. */
  | 'capped'
  | 'aborted';

export interface SweepResult {
  readonly status: SweepStatus;
  readonly deleted: number;
  readonly batches: number;
  readonly latch?: PruneLatch;
  readonly ms: number;
}

export interface SweepOptions {
  /** The financial database; the sweep opens a dedicated session on it for the advisory lock. */
  readonly databaseUrl: string;
  readonly service: string;
  /** RECONCILE_SETTLED_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** Checked between batches: an abort stops the sweep after the batch in flight. */
  readonly signal?: AbortSignal;
  /** Rows per statement; default 5,000. */
  readonly batchSize?: number;
  /** Rows per cycle before the sweep stops and latches; default 1,000,000. */
  readonly cap?: number;
  /** Server-side lock wait per statement (default 5 s): the sweep gives way rather than queue. */
  readonly lockTimeoutMs?: number;
  /** After each batch (awaited): progress, and a seam for tests. */
  readonly onBatch?: (batch: PruneBatch) => unknown;
}

function assertDays(days: number): void {
  if (!Number.isInteger(days) || days < 0 || days > 3650) throw new RangeError(`retention days must be a whole number from 0 to 3650: ${days}`);
}

/**
 * One cycle of the terminal-state sweep (ADR-058 class 1, service-local): on a dedicated
 * session holding `pg_try_advisory_lock(financialReconcileSweep)` (not got: skip), delete
 * settled rows past the window through the transport sweep's batch loop (`pruneTable`), capped
 * per cycle; a capped cycle latches the target in `prune_latch` and later cycles delete nothing
 * until `pnpm xtask prune financial --resume subsidy_reconcile_queue`. Counts each batch into
 * `event_rows_pruned_total{table="subsidy_reconcile_queue"}` and logs one line per cycle.
 */
export async function sweepSettledReconcileRows(options: SweepOptions): Promise<SweepResult> {
  assertDays(options.retentionDays);
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.registry ? mqMetrics(options.registry) : undefined;
  const cap = options.cap ?? PRUNE_CYCLE_CAP;
  const table = RECONCILE_SWEEP_TARGET;
  const started = performance.now();
  let outcome: Omit<SweepResult, 'ms'> = { status: 'aborted', deleted: 0, batches: 0 };
  let deleted = 0;
  if (options.retentionDays === 0) {
    outcome = { status: 'disabled', deleted: 0, batches: 0 };
  } else {
    try {
      await withDedicatedSession(
        options.databaseUrl,
        async (session) => {
          if (!(await session.tryAdvisoryLock(LOCK_KEYS.financialReconcileSweep))) {
            outcome = { status: 'skipped', deleted: 0, batches: 0 };
            return;
          }
          // A batch lost to a crash only brings its rows back, still eligible; the latch commits synchronously.
          await session.sql`set synchronous_commit = off`;
          const latch = (await readPruneLatches(session.sql)).get(table);
          metrics?.pruneCapLatched.set({ table }, latch ? 1 : 0);
          if (latch) {
            outcome = { status: 'latched', deleted: 0, batches: 0, latch };
            return;
          }
          const run = await pruneTable(session.sql, settledPruneTarget(options.retentionDays), {
            batchSize: options.batchSize ?? PRUNE_BATCH,
            cap,
            signal: session.signal,
            onBatch: async (batch) => {
              deleted = batch.total;
              metrics?.rowsPruned.inc({ table }, batch.deleted);
              await options.onBatch?.(batch);
            },
          });
          if (run.capped) {
            const latched = await latchPrune(session.sql, table, { deleted: run.deleted, cap });
            metrics?.pruneCapLatched.set({ table }, 1);
            outcome = { status: 'capped', deleted: run.deleted, batches: run.batches, latch: latched };
          } else {
            outcome = { status: run.aborted ? 'aborted' : 'pruned', deleted: run.deleted, batches: run.batches };
          }
        },
        {
          service: `${options.service}:reconcile-sweep`,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.lockTimeoutMs !== undefined ? { lockTimeoutMs: options.lockTimeoutMs } : {}),
        },
      );
    } catch (error) {
      // The caller's abort, rethrown after a clean return, is an aborted cycle, not a failure.
      if (!(options.signal?.aborted && error === options.signal.reason)) {
        logger.warn({ table, deleted, ms: Math.round(performance.now() - started), err: error }, 'settled reconcile sweep failed');
        throw error;
      }
      outcome = { status: 'aborted', deleted, batches: outcome.batches };
    }
  }
  const result: SweepResult = { ...outcome, ms: Math.round(performance.now() - started) };
  log(logger, options, result, cap);
  return result;
}

function log(logger: Logger, options: SweepOptions, result: SweepResult, cap: number): void {
  const base = { table: RECONCILE_SWEEP_TARGET, retentionDays: options.retentionDays, status: result.status, deleted: result.deleted, batches: result.batches, ms: result.ms };
  if (result.status === 'latched' || result.status === 'capped') {
    logger.warn(
      { ...base, since: result.latch?.latchedAt.toISOString(), deletedWhenCapped: result.latch?.deleted, cap, resume: `pnpm xtask prune ${options.service} --resume ${RECONCILE_SWEEP_TARGET}` },
      'settled reconcile sweep latched after hitting its cap (a jumped clock?); see docs/runbooks/prune-cap-latched.md',
    );
    return;
  }
  logger.info(base, 'settled reconcile sweep');
}

export interface SweepPreview {
  readonly disabled: boolean;
  readonly latch: PruneLatch | undefined;
  /** Eligible rows now, counted up to cap + 1. */
  readonly eligible: number;
  readonly wouldDelete: number;
  readonly wouldLatch: boolean;
}

/** What a sweep would do now, deleting nothing (`pnpm xtask prune financial --dry-run`). */
export async function previewSettledReconcileSweep(sql: Sql, retentionDays: number, cap: number = PRUNE_CYCLE_CAP): Promise<SweepPreview> {
  assertDays(retentionDays);
  const latch = (await readPruneLatches(sql)).get(RECONCILE_SWEEP_TARGET);
  if (retentionDays === 0) return { disabled: true, latch, eligible: 0, wouldDelete: 0, wouldLatch: false };
  const t = settledPruneTarget(retentionDays);
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from (select 1 from ${sql(t.table)} where ${t.eligible(sql)} limit ${cap + 1}) x`;
  const eligible = row!.n;
  return { disabled: false, latch, eligible, wouldDelete: latch ? 0 : Math.min(eligible, cap), wouldLatch: !latch && eligible > cap };
}
