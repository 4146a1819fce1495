/**
 * @craig/svc-placements: placements for the cases this service learned of from `case.*`
 * events; each start and end stages `placement.started` / `placement.ended` in its own
 * transaction, and a `case.closed` ends the case's active placements in the inbox transaction.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type PlacementsDeps, type PlacementsService } from './service.ts';
/** The database's migration sets (`mq`, `case_refs`, then `placements`). */
export { PLACEMENTS_MIGRATION_SETS, PLACEMENTS_MIGRATIONS } from './migrations.ts';
/** The `case.*` consumer. */
export { casesConsumer, CASES_CONSUMER } from './consumer.ts';
/** Placement writes (each takes the caller's transaction and stages its event there) and reads. */
export { startPlacement, endPlacement, endPlacementsOfCase, getPlacement, listPlacements, MAX_PROVIDER_LENGTH, MAX_PLACEMENTS_PER_PAGE, type EndReason, type PlacementRow } from './placement-store.ts';
/** Refusals with stable codes (`case_unknown` / `case_closed` come from `@craig/service`). */
export { PlacementNotFoundError, PlacementAlreadyEndedError } from './errors.ts';
/** Aged history and traffic for `pnpm xtask devstack`. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { PLACEMENTS_EVENTS } from './events.ts';
