import { ServiceError } from '@craig/service';

/** A query parameter is malformed, repeated, unknown or out of range (`invalid_request`, 400). */
export { InvalidQueryError } from '@craig/service';
/** Errors of the security service, each with a stable `code` (HTTP statuses: packages/service/src/http-errors.ts). */
export class SecurityError extends ServiceError {}

