/**
 * @craig/service: what every craig service composes. A Fastify app with `/healthz`, `/readyz`,
 * `/metrics` and bearer auth on `/v1/admin/*`; error codes mapped to HTTP statuses in one
 * place; a lifecycle that stops things in reverse order on SIGTERM/SIGINT; the root logger; the
 * boot helper every `main.ts` calls; zod request parsing with typed errors; the case-ref
 * projection the case consumers share.
 */
export { createHttpApp, listRoutes, handledRequests, DEFAULT_BODY_LIMIT_BYTES, type HttpAppOptions, type ReadinessCheck, type RouteEntry } from './app.ts';
/** The admin token check (digests compared in constant time) and its typed refusal; the audit line's bounded summaries. */
export { adminTokenCheck, tokenFingerprint, UnauthorizedError, type AdminTokenCheck, type UnauthorizedReason } from './admin-auth.ts';
export { summarize } from './admin-audit.ts';
export { registerEventAdminRoutes, type EventAdminHandlers, type RedriveRequest, type ReplayRequest } from './event-admin-routes.ts';
/** Replay and redrive on the service's own outbox, for `registerEventAdminRoutes`. */
export { outboxAdminHandlers } from './event-admin-handlers.ts';
export { HTTP_STATUS_BY_CODE, httpStatusFor, errorBody, isCodedError, type CodedError } from './http-errors.ts';
export { Lifecycle } from './lifecycle.ts';
export { createLogger, silentLogger } from './logger.ts';
export type { DemoContext, ServiceDemo } from './demo.ts';
/** Aged outbox and inbox rows for a demo's `seedAgedHistory`, and the request its `tick` makes. */
export { seedAgedOutbox, seedAgedInbox, demoRequest, type AgedOutboxRow, type AgedInboxRow } from './demo-kit.ts';
/** The composition root every `main.ts` repeats: settings, schema, pool, transport, parts started in order, stopped in reverse. */
export { bootService, runService, loopTask, subscriptionTask, type BackgroundTask, type BootContext, type BootedService, type BootOptions, type ConsumerSpec, type ServiceParts } from './boot.ts';
/** What every `createService` builds first (the app with the event admin routes, the outbox worker) from the deps every service takes. */
export { serviceCore, consumerOptions, inboxDeps, type ServiceCore, type ServiceCoreDeps, type ServiceCoreOptions, type ConsumerDeps, type ConsumerOptions } from './service-core.ts';
/** Parse a request part with zod; a mismatch is an `invalid_request` error naming the field and value. */
export { parseRequest, InvalidRequestError, type RequestPart } from './validation.ts';
/** The base of services' own errors, and query-string parsing that names every bad parameter. */
export { ServiceError, InvalidQueryError, previewValue, queryParam, refuseUnknownParams, limitParam, type QueryParams } from './errors.ts';
/** The local view of cases (`case_refs`) that `case.*` consumers keep, and the refusals it backs. */
export { CASE_REFS_MIGRATIONS, CASE_EVENT_PATTERNS, applyCaseEvent, requireOpenCase, caseRefStatus, CaseUnknownError, CaseClosedError, type CaseRefChange, type CaseRefStatus } from './case-refs.ts';
