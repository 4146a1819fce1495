import { LOCK_KEYS, type Sql } from '@craig/db';
import {
  defineRetentionSpec,
  definePruneTarget,
  previewLocalSweep,
  runLocalSweep,
  PRUNE_CYCLE_CAP,
  type LocalSweepDefinition,
  type LocalSweepOptions,
  type LocalSweepPreview,
  type LocalSweepResult,
  type LocalSweepStatus,
  type PruneTarget,
  type RetentionSpec,
} from '@craig/mq';

/** The swept table, and the sweep's name in `prune_latch` and `event_rows_pruned_total{table}`. */
export const RECONCILE_SWEEP_TARGET = 'subsidy_reconcile_queue';

/**
 * Settled rows whose `settled_at` is older than the window, by the database's clock. Settled is
 * terminal, so a row that matches stays matching; the delete re-checks the whole predicate anyway.
 */
export function settledPruneTarget(days: number): PruneTarget {
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

/**
 * The sweep as @craig/mq's local-sweep runs it: `LOCK_KEYS.financialReconcileSweep`, latch
 * target and metric label `subsidy_reconcile_queue`.
 */
export const RECONCILE_SWEEP: LocalSweepDefinition = Object.freeze({
  name: RECONCILE_SWEEP_TARGET,
  lockKey: LOCK_KEYS.financialReconcileSweep,
  target: settledPruneTarget,
  service: 'financial',
});

export type SweepStatus = LocalSweepStatus;
export type SweepResult = LocalSweepResult;
export type SweepPreview = LocalSweepPreview;

export interface SweepOptions extends Omit<LocalSweepOptions, 'windowDays' | 'applicationName'> {
  /** `application_name` prefix of the sweep's session. */
  readonly service: string;
  /** RECONCILE_SETTLED_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
}

/**
 * One cycle of the terminal-state sweep (ADR-058 class 1, service-local; `runLocalSweep` from
 * @craig/mq): under `pg_try_advisory_lock(financialReconcileSweep)` on a dedicated session,
 * settled rows past the window go in bounded batches, capped per cycle; a capped cycle latches
 * until `pnpm xtask prune financial --resume subsidy_reconcile_queue`.
 */
export function sweepSettledReconcileRows(options: SweepOptions): Promise<SweepResult> {
  const { service, retentionDays, ...rest } = options;
  return runLocalSweep(RECONCILE_SWEEP, { ...rest, windowDays: retentionDays, applicationName: `${service}:reconcile-sweep` });
}

/** What a sweep would do now, deleting nothing (`pnpm xtask prune financial --dry-run`). */
export function previewSettledReconcileSweep(sql: Sql, retentionDays: number, cap: number = PRUNE_CYCLE_CAP): Promise<SweepPreview> {
  return previewLocalSweep(sql, RECONCILE_SWEEP, retentionDays, cap);
}
