/**
 * @craig/svc-cases: opens and closes cases; each change stages `case.opened` / `case.closed`
 * in its own transaction, published by the outbox worker.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type CasesDeps, type CasesService } from './service.ts';
/** The database's migration sets (`mq`, then `cases`). */
export { CASES_MIGRATION_SETS, CASES_MIGRATIONS } from './migrations.ts';
/** Case writes (each takes the caller's transaction and stages its event there) and reads. */
export { openCase, closeCase, getCase, listCases, MAX_SUBJECT_LENGTH, MAX_CASES_PER_PAGE, type CaseRow } from './case-store.ts';
/** Refusals with stable codes. */
export { CaseNotFoundError, CaseAlreadyClosedError } from './errors.ts';
/** Aged history and traffic for `pnpm xtask devstack`. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { CASES_EVENTS } from './events.ts';
