import { LOCK_KEYS, withDedicatedSession } from '@craig/db';
import {
  defineRetentionSpec,
  definePruneTarget,
  latchPrune,
  mqMetrics,
  POLL_INTERVAL_MS,
  PRUNE_CYCLE_CAP,
  PRUNE_EVERY_TICKS,
  pruneJitter,
  pruneTable,
  readPruneLatches,
  type PruneBatch,
  type PruneLatch,
  type PruneTarget,
  type RetentionSpec,
} from '@craig/mq';
import { setTimeout as delay } from 'node:timers/promises';
import pino, { type Logger } from 'pino';
import type { Registry } from 'prom-client';

/** The table the sweep deletes from; also its `prune_latch` target and its metric label. */
export const SEND_JOB_SWEEP_TABLE = 'exchange_send_jobs';

/**
 * Finished send jobs past the window: terminal (`sent`, `failed`, `cancelled`) AND `finished_at`
 * older than `days` by the database's clock. `pruneTable` evaluates it in the select and
 * re-checks it in the delete. Queued and sending jobs never match (their `finished_at` is
 * null, CHECK-paired with the status).
 */
export function sendJobPruneTarget(days: number): PruneTarget {
  return definePruneTarget({
    table: SEND_JOB_SWEEP_TABLE,
    orderBy: 'finished_at',
    eligible: (sql) => sql`status in ('sent', 'failed', 'cancelled') and finished_at < now() - make_interval(days => ${days})`,
  });
}

/**
 * The sweep's invariant, `exchange_send_jobs_retention_overrun`, for `retentionOverrun`
 * (@craig/mq): finished jobs older than SEND_JOB_RETENTION_DAYS plus the grace. Red means the
 * sweep is not running, is latched, or cannot keep up. Report-only; holds trivially at 0.
 */
export function sendJobRetentionSpec(retentionDays: number): RetentionSpec {
  return defineRetentionSpec({
    name: 'exchange_send_jobs_retention_overrun',
    table: SEND_JOB_SWEEP_TABLE,
    column: 'finished_at',
    windowDays: retentionDays,
    eligible: (sql) => sql`t.status in ('sent', 'failed', 'cancelled')`,
  });
}

export interface SendJobSweepOptions {
  /** The exchange database; the sweep opens a dedicated session on it for the advisory lock. */
  readonly databaseUrl: string;
  /** Settings SEND_JOB_RETENTION_DAYS; 0 disables the sweep. */
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
  /** After each batch (awaited): a seam for tests. */
  readonly onBatch?: (batch: PruneBatch) => unknown;
}

export type SendJobSweepStatus =
  /** Swept everything eligible. */
  | 'pruned'
  /** SEND_JOB_RETENTION_DAYS is 0. */
  | 'disabled'
  /** Another session holds `LOCK_KEYS.exchangeSendJobSweep`: this cycle did nothing. */
  | 'skipped'
  /** Latched by an earlier capped cycle: not touched until an operator resumes it. */
  | 'latched'
  /** Hit the cap in this cycle and latched. */
  | 'capped'
  | 'aborted';

export interface SendJobSweepResult {
  readonly status: SendJobSweepStatus;
  readonly deleted: number;
  readonly batches: number;
  readonly latch?: PruneLatch;
  readonly ms: number;
}

/**
 * One cycle of the terminal-state sweep of `exchange_send_jobs` (seed 000, service-local
 * sweeps): on a dedicated session holding `pg_try_advisory_lock(exchangeSendJobSweep)` (not
 * got: skip), delete finished jobs past the window with `pruneTable`'s bounded batches; past
 * the cap, stop and latch (`prune_latch`, target `exchange_send_jobs`) until an operator runs
 * `pnpm xtask prune exchange --resume exchange_send_jobs`. The session is closed on every path.
 * Rows go into `event_rows_pruned_total{table="exchange_send_jobs"}` per batch; one log line
 * per cycle.
 */
export async function sweepSendJobs(options: SendJobSweepOptions): Promise<SendJobSweepResult> {
  const days = options.retentionDays;
  if (!Number.isInteger(days) || days < 0) throw new RangeError(`retentionDays must be a whole number ≥ 0: ${days}`);
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.registry ? mqMetrics(options.registry) : undefined;
  const cap = options.cap ?? PRUNE_CYCLE_CAP;
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  if (days === 0) {
    const result: SendJobSweepResult = { status: 'disabled', deleted: 0, batches: 0, ms: ms() };
    logger.info({ table: SEND_JOB_SWEEP_TABLE, status: result.status }, 'send job sweep');
    return result;
  }
  let deleted = 0;
  let result: SendJobSweepResult;
  try {
    result = await withDedicatedSession(
      options.databaseUrl,
      async (session): Promise<SendJobSweepResult> => {
        if (!(await session.tryAdvisoryLock(LOCK_KEYS.exchangeSendJobSweep))) return { status: 'skipped', deleted: 0, batches: 0, ms: ms() };
        // A lost batch commit only brings its rows back, still eligible; the latch commits synchronously.
        await session.sql`set synchronous_commit = off`;
        const latch = (await readPruneLatches(session.sql)).get(SEND_JOB_SWEEP_TABLE);
        metrics?.pruneCapLatched.set({ table: SEND_JOB_SWEEP_TABLE }, latch ? 1 : 0);
        if (latch) return { status: 'latched', deleted: 0, batches: 0, latch, ms: ms() };
        const run = await pruneTable(session.sql, sendJobPruneTarget(days), {
          cap,
          signal: session.signal,
          ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
          onBatch: async (batch) => {
            deleted = batch.total;
            metrics?.rowsPruned.inc({ table: SEND_JOB_SWEEP_TABLE }, batch.deleted);
            await options.onBatch?.(batch);
          },
        });
        if (run.capped) {
          const latched = await latchPrune(session.sql, SEND_JOB_SWEEP_TABLE, { deleted: run.deleted, cap });
          metrics?.pruneCapLatched.set({ table: SEND_JOB_SWEEP_TABLE }, 1);
          return { status: 'capped', deleted: run.deleted, batches: run.batches, latch: latched, ms: ms() };
        }
        return { status: run.aborted ? 'aborted' : 'pruned', deleted: run.deleted, batches: run.batches, ms: ms() };
      },
      {
        service: 'exchange:send-job-sweep',
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
      },
    );
  } catch (error) {
    // withDedicatedSession rethrows the caller's abort after a clean return: an aborted cycle.
    if (!(options.signal?.aborted && error === options.signal.reason)) {
      logger.warn({ err: error, table: SEND_JOB_SWEEP_TABLE, deleted, ms: ms() }, 'send job sweep failed');
      throw error;
    }
    result = { status: 'aborted', deleted, batches: 0, ms: ms() };
  }
  const line = { table: SEND_JOB_SWEEP_TABLE, status: result.status, deleted: result.deleted, batches: result.batches, ms: result.ms };
  if (result.status === 'latched' || result.status === 'capped') {
    logger.warn(
      { ...line, since: result.latch?.latchedAt.toISOString(), deletedWhenCapped: result.latch?.deleted, cap, resume: `pnpm xtask prune exchange --resume ${SEND_JOB_SWEEP_TABLE}` },
      'send job sweep latched after hitting its cap (a jumped clock?); see docs/runbooks/prune-cap-latched.md',
    );
  } else {
    logger.info(line, 'send job sweep');
  }
  return result;
}

export interface SendJobSweeperOptions extends Omit<SendJobSweepOptions, 'signal'> {
  /** Between the starts of two cycles; default one hour. */
  readonly everyMs?: number;
  /**
   * Before the first cycle; default the deterministic phase `pruneJitter('exchange:send-jobs')`
   * seconds, so replicas share a phase (the lock picks one) and the fleet's sweeps spread.
   */
  readonly initialDelayMs?: number;
}

/** The sweep's own cadence: hourly, with a deterministic jitter; stopped by its signal. */
export class SendJobSweeper {
  private readonly logger: Logger;

  constructor(private readonly options: SendJobSweeperOptions) {
    this.logger = options.logger ?? pino({ level: 'silent' });
  }

  /** One cycle now. */
  runOnce(signal?: AbortSignal): Promise<SendJobSweepResult> {
    return sweepSendJobs({ ...this.options, ...(signal ? { signal } : {}) });
  }

  /** Cycles until `signal` aborts (the cycle in flight stops between batches). */
  async run(signal: AbortSignal): Promise<void> {
    const every = this.options.everyMs ?? PRUNE_EVERY_TICKS * POLL_INTERVAL_MS;
    await sleep(this.options.initialDelayMs ?? pruneJitter('exchange:send-jobs') * POLL_INTERVAL_MS, signal);
    while (!signal.aborted) {
      const started = Date.now();
      try {
        await this.runOnce(signal);
      } catch (error) {
        // Logged by the sweep; retried at the next cycle. Nothing is half-deleted: each batch is one statement.
        this.logger.error({ err: error }, 'send job sweep cycle failed');
      }
      await sleep(Math.max(0, every - (Date.now() - started)), signal);
    }
  }
}

async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    // aborted: the loop condition ends the run
  }
}
