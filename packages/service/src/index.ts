/**
 * @craig/service: what every craig service composes. A Fastify app with `/healthz`, `/readyz`,
 * `/metrics` and bearer auth on `/v1/admin/*`; error codes mapped to HTTP statuses in one
 * place; a lifecycle that stops things in reverse order on SIGTERM/SIGINT; the root logger.
 */
export { createHttpApp, type HttpAppOptions, type ReadinessCheck } from './app.ts';
export { registerEventAdminRoutes, type EventAdminHandlers, type RedriveRequest, type ReplayRequest } from './event-admin-routes.ts';
export { HTTP_STATUS_BY_CODE, httpStatusFor, errorBody, isCodedError, type CodedError } from './http-errors.ts';
export { Lifecycle } from './lifecycle.ts';
export { createLogger, silentLogger } from './logger.ts';
export type { DemoContext, ServiceDemo } from './demo.ts';
