/**
 * @craig/svc-safety: safety reports for the cases this service learned of from `case.*`
 * events; filing one stages `safety.reported` in the same transaction.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type SafetyDeps, type SafetyService } from './service.ts';
/** The database's migration sets (`mq`, `case_refs`, then `safety`). */
export { SAFETY_MIGRATION_SETS, SAFETY_MIGRATIONS } from './migrations.ts';
/** The `case.*` consumer. */
export { casesConsumer, CASES_CONSUMER } from './consumer.ts';
/** Report writes (filing takes the caller's transaction and stages its event there) and reads. */
export { fileReport, getReport, listReports, SEVERITIES, MAX_SUMMARY_LENGTH, MAX_REPORTS_PER_PAGE, type Severity, type SafetyReportRow } from './report-store.ts';
/** Refusals with stable codes (`case_unknown` comes from `@craig/service`). */
export { SafetyReportNotFoundError } from './errors.ts';
/** Aged history and traffic for `pnpm xtask devstack`. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { SAFETY_EVENTS } from './events.ts';
