/**
 * @craig/cleanup: bounded, fenced, resumable cleanup jobs (seed 004) for the inventory source
 * graph (servers → libraries → items). A prune job collects a seen-ID manifest, is sealed with
 * an explicit count, closes admission to its library and deletes at most 128 rows per step with
 * revision (`xmin`) checks; removal jobs close admission at once and drain, then remove parents.
 * Admission is enforced in the database by triggers; the service runs as a non-owner role.
 */

/** Start a job (per-server serialization; removal jobs close admission at once). */
export { createJob, cancel, status, cancelExpiredJobs, DEFAULT_COLLECT_DEADLINE_MINUTES, type CreateJobInput, type CreateJobOptions } from './jobs.ts';
/** Collect and seal a prune job's manifest. */
export { appendSeen, seal, type AppendSeenResult, type SealOptions } from './manifest.ts';
/** One bounded, replay-safe step, a window of them in one transaction, or a job to completion. */
export { step, stepWindow, runToCompletion, MAX_WINDOW_STEPS, STEP_ROW_BUDGET, STEP_SCAN_WINDOW, type StepOptions, type StepTimings, type WindowOptions } from './step.ts';
/** External id validation (≤ 128 per call). */
export { validateExternalIds, externalIdProblem, EXTERNAL_ID_PATTERN, MAX_IDS_PER_CALL } from './external-ids.ts';
/** The `cleanup` migration set, its installer guard and the runtime role. */
export {
  cleanupMigrations,
  guardedMigrationSet,
  assertDatabaseAllowed,
  isDatabaseAllowed,
  CLEANUP_MIGRATIONS_DIRECTORY,
  RUNTIME_ROLE,
  type CleanupInstallOptions,
} from './install.ts';
/** Bounded removal of finished jobs' history through `pruneTable`. */
export { sweepCleanupHistory, cleanupRetentionSpecs, type SweepHistoryOptions, type SweepHistoryResult, type HistoryTable } from './history.ts';
/** The worker loop that steps jobs to completion. */
export { createCleanupRunner, DEFAULT_STEP_PAUSE_MS, DEFAULT_WINDOW_STEPS, DEFAULT_WINDOW_MS, type CleanupRunner, type CleanupRunnerOptions, type CycleReport } from './runner.ts';
/** Prometheus metrics of the runner. */
export { cleanupMetrics, type CleanupMetrics } from './metrics.ts';
/** Typed errors of every refusal; `translatePgError` turns trigger/NOWAIT errors from source writes into them. */
export {
  CleanupError,
  ServerBusy,
  TooManyIds,
  InvalidExternalIds,
  ManifestCountMismatch,
  JobNotFound,
  JobStateConflict,
  InvalidJobRequest,
  TargetNotFound,
  AdmissionClosed,
  AdmissionBusy,
  SourceWriteRefused,
  ProtocolRequired,
  DatabaseNotAllowed,
} from './errors.ts';
export { translatePgError } from './internal/translate.ts';
/** Job and step shapes. */
export { JOB_KINDS, type JobKind, type JobPhase, type JobState, type JobStatus, type RowCounts, type StepResult } from './types.ts';
