import { LOCK_KEYS, type Sql } from '@craig/db';
import {
  defineRetentionSpec,
  definePruneTarget,
  LocalSweepRunner,
  previewLocalSweep,
  runLocalSweep,
  PRUNE_CYCLE_CAP,
  type LocalSweepDefinition,
  type LocalSweepOptions,
  type LocalSweepPreview,
  type LocalSweepResult,
  type LocalSweepRunnerOptions,
  type LocalSweepStatus,
  type PruneTarget,
  type RetentionSpec,
} from '@craig/mq';

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

/**
 * The sweep as @craig/mq's local-sweep runs it: `LOCK_KEYS.exchangeSendJobSweep`, latch target
 * and metric label `exchange_send_jobs`.
 */
export const SEND_JOB_SWEEP: LocalSweepDefinition = Object.freeze({
  name: SEND_JOB_SWEEP_TABLE,
  lockKey: LOCK_KEYS.exchangeSendJobSweep,
  target: sendJobPruneTarget,
  service: 'exchange',
});

export interface SendJobSweepOptions extends Omit<LocalSweepOptions, 'windowDays'> {
  /** Settings SEND_JOB_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
}

export type SendJobSweepStatus = LocalSweepStatus;
export type SendJobSweepResult = LocalSweepResult;

/**
 * One cycle of the terminal-state sweep of `exchange_send_jobs` (seed 000, service-local
 * sweeps; `runLocalSweep` from @craig/mq): under `pg_try_advisory_lock(exchangeSendJobSweep)`
 * on a dedicated session (not got: skip), finished jobs past the window go in bounded batches;
 * past the cap it stops and latches until `pnpm xtask prune exchange --resume exchange_send_jobs`.
 */
export function sweepSendJobs(options: SendJobSweepOptions): Promise<SendJobSweepResult> {
  const { retentionDays, ...rest } = options;
  return runLocalSweep(SEND_JOB_SWEEP, { ...rest, windowDays: retentionDays });
}

/** What a sweep would do now, deleting nothing (`pnpm xtask prune exchange --dry-run`). */
export function previewSendJobSweep(sql: Sql, retentionDays: number, cap: number = PRUNE_CYCLE_CAP): Promise<LocalSweepPreview> {
  return previewLocalSweep(sql, SEND_JOB_SWEEP, retentionDays, cap);
}

export interface SendJobSweeperOptions extends Omit<LocalSweepRunnerOptions, 'windowDays'> {
  /** Settings SEND_JOB_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
}

/** The sweep's own cadence (hourly, a deterministic per-service phase; @craig/mq's `LocalSweepRunner`). */
export class SendJobSweeper extends LocalSweepRunner {
  constructor(options: SendJobSweeperOptions) {
    const { retentionDays, ...rest } = options;
    super(SEND_JOB_SWEEP, { ...rest, windowDays: retentionDays });
  }

  /** One cycle now. */
  runOnce(signal?: AbortSignal): Promise<SendJobSweepResult> {
    return this.runNow(signal);
  }
}
