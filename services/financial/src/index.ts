/**
 * @craig/svc-financial: the subsidy reconcile queue, fed by `placement.*` through the inbox,
 * matched by subsidy imports, settled with a `subsidy.settled` event per row, and swept of
 * settled rows past RECONCILE_SETTLED_RETENTION_DAYS (a service-local terminal-state sweep).
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type FinancialDeps, type FinancialService, type FinancialSweepDeps } from './service.ts';
/** The database's migration sets (`mq`, then `financial`). */
export { financialMigrationSets, FINANCIAL_MIGRATIONS } from './migrations.ts';
/** The `placement.*` inbox consumer (`financial.placements`). */
export { startPlacementConsumer, PLACEMENTS_CONSUMER, PLACEMENT_PATTERNS, type PlacementConsumerOptions } from './consumers.ts';
/** Reads and writes of the queue and the imports. */
export {
  enqueueFromEvent,
  recordImport,
  settleMatched,
  listQueue,
  QUEUE_STATUSES,
  SUBSIDY_SETTLED_EVENT,
  MAX_SETTLE_BATCH,
  MAX_QUEUE_PAGE,
  type ImportResult,
  type QueueRow,
  type QueueStatus,
  type SettleResult,
} from './reconcile-store.ts';
/** Validation of `POST /v1/subsidy-imports`. */
export { parseImportRequest, parseAmount, parsePeriod, MAX_IMPORT_LINES, type ImportRequest } from './import-request.ts';
/** The sweep of settled rows, its invariant and its dry run. */
export {
  sweepSettledReconcileRows,
  previewSettledReconcileSweep,
  settledPruneTarget,
  reconcileRetentionSpecs,
  RECONCILE_SWEEP_TARGET,
  RECONCILE_SWEEP,
  type SweepOptions,
  type SweepPreview,
  type SweepResult,
  type SweepStatus,
} from './reconcile-sweep.ts';
/** The sweep's timer loop and on-demand cycle. */
export { SweepRunner, SWEEP_EVERY_MS, type SweepRunnerOptions } from './sweep-runner.ts';
/** The service's errors, each with a stable `code`. */
export { FinancialError, InvalidRequestError, SubsidyImportExistsError, SweepLockHeldError } from './errors.ts';
/** What the devstack seeds and drives. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { FINANCIAL_EVENTS } from './events.ts';
