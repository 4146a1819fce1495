/**
 * @craig/svc-exchange: a send job and an SSA screening run per opened case, moved on by a
 * simulated worker; finished send jobs swept past SEND_JOB_RETENTION_DAYS, and the three SSA
 * tables archived then pruned (`@craig/retention`) in FK order past a hot window of ≥ 365 days.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type ExchangeArchiveDeps, type ExchangeDeps, type ExchangeSendJobDeps, type ExchangeService } from './service.ts';
/** The database's migration sets (`mq`, `retention`, then `exchange`). */
export { exchangeMigrationSets, EXCHANGE_MIGRATIONS } from './migrations.ts';
/** The archive specs in FK deletion order (ledger-only: no announcement), the freshness horizon and the named writer-side refusal. */
export { HANDOFFS_SPEC, MEMBERS_SPEC, RUNS_SPEC, EXCHANGE_ARCHIVE_SPECS, SCREENING_FRESHNESS_MONTHS, INVALIDATE_REFUSAL } from './archive-specs.ts';
/** The consumer of `case.opened` (`exchange.cases`) and its handler. */
export { startCasesConsumer, onCaseOpened, parseCaseOpened, CASES_CONSUMER, CASES_PATTERNS, DEFAULT_DESTINATION, type CasesConsumerOptions } from './consumers.ts';
/** The simulated worker moving send jobs and screenings on. */
export { ExchangeWorker, type ExchangeWorkerOptions, type WorkerStep } from './worker.ts';
/** The terminal-state sweep of `exchange_send_jobs`, its prune target and its invariant. */
export {
  sweepSendJobs,
  sendJobPruneTarget,
  sendJobRetentionSpec,
  previewSendJobSweep,
  SEND_JOB_SWEEP,
  SendJobSweeper,
  SEND_JOB_SWEEP_TABLE,
  type SendJobSweepOptions,
  type SendJobSweepResult,
  type SendJobSweepStatus,
  type SendJobSweeperOptions,
} from './send-job-sweep.ts';
/** Reads and writes of send jobs. */
export { queueSendJob, listSendJobs, cancelSendJob, SEND_JOB_STATUSES, TERMINAL_SEND_JOB_STATUSES, LIVE_SEND_JOB_STATUSES, type SendJob, type SendJobStatus } from './send-jobs.ts';
/** Reads and writes of screening runs, including the guarded invalidation. */
export { startScreening, getScreening, invalidateScreening, TERMINAL_MEMBER_STATUSES, type Screening, type ScreeningMember, type RunStatus, type MemberStatus } from './screenings.ts';
/** The service's errors, each with a stable `code`. */
export { ExchangeError, InvalidQueryError, SendJobNotFoundError, SendJobTerminalError, ScreeningNotFoundError, ScreeningPastFreshnessError } from './errors.ts';
/** What the devstack seeds and drives. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { EXCHANGE_EVENTS } from './events.ts';
