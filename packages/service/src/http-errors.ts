/**
 * The one place error codes become HTTP statuses. Every package's errors carry a stable `code`;
 * a service never picks a status itself. Unknown codes: retryable errors are 503 (try again),
 * the rest 500.
 */
export const HTTP_STATUS_BY_CODE: Readonly<Record<string, number>> = Object.freeze({
  // request shape (Fastify's own refusals map here too: see app.ts)
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  uri_too_long: 414,
  unsupported_media_type: 415,
  // @craig/mq
  replay_out_of_window: 400,
  invalid_replay_range: 400,
  invalid_redrive_id: 400,
  invalid_event: 400,
  payload_too_large: 413,
  // @craig/db
  lock_not_available: 409,
  // @craig/retention
  purge_refused: 403,
  // services that archive: an on-demand cycle while another archiver holds the lease
  archive_lease_held: 409,
  // exchange (services/exchange/src/errors.ts)
  send_job_not_found: 404,
  send_job_terminal: 409,
  screening_not_found: 404,
  screening_past_freshness: 409,
  // @craig/cleanup (see packages/cleanup/src/errors.ts)
  server_busy: 409,
  invalid_external_ids: 400,
  too_many_ids: 400,
  manifest_count_mismatch: 409,
  job_not_found: 404,
  job_state_conflict: 409,
  admission_closed: 409,
  database_not_allowed: 403,
  admission_busy: 409,
  cleanup_protocol_required: 409,
  parent_not_found: 404,
  parent_mismatch: 409,
  identity_immutable: 409,
  invalid_job_request: 400,
  // shared case refs (packages/service/src/case-refs.ts)
  case_unknown: 409,
  case_closed: 409,
  // services/cases
  case_not_found: 404,
  case_already_closed: 409,
  // services/placements
  placement_not_found: 404,
  placement_already_ended: 409,
  // services/safety
  safety_report_not_found: 404,
  // financial: an import of a source and period already recorded; an on-demand sweep while another sweeper holds the lock
  subsidy_import_exists: 409,
  sweep_lock_held: 409,
});

export interface CodedError {
  readonly code: string;
  readonly retryable?: boolean;
}

export function isCodedError(error: unknown): error is Error & CodedError {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string';
}

export function httpStatusFor(error: unknown): number {
  if (isCodedError(error)) {
    const status = HTTP_STATUS_BY_CODE[error.code];
    if (status !== undefined) return status;
    if (error.retryable === true) return 503;
  }
  return 500;
}

const MAX_MESSAGE = 1000;
// Above the 200-character echo of `InvalidRequestError` and its "… (N characters)" suffix, which must survive.
const MAX_TEXT = 300;
const MAX_ITEMS = 20;

function bounded(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

// An offending value as an error body echoes it: strings cut, at most 20 items or keys, two
// levels deep. An error body is not a copy of the input: a 10 MB field or a 100,000-deep array
// must not come back (nor overflow the serializer's stack on the way).
function echoField(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return bounded(value, MAX_TEXT);
  if (value === null || value === undefined || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object') return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Array.isArray(value)) {
    if (depth <= 0) return '[array]';
    const items = value.slice(0, MAX_ITEMS).map((v) => echoField(v, depth - 1));
    return value.length > MAX_ITEMS ? [...items, `… and ${value.length - MAX_ITEMS} more`] : items;
  }
  if (depth <= 0) return '[object]';
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).slice(0, MAX_ITEMS)) out[bounded(key, MAX_TEXT)] = echoField((value as Record<string, unknown>)[key], depth - 1);
  return out;
}

/**
 * The JSON body of an error response: code, message and the error's own fields (offending
 * values), bounded: the message at 1,000 characters, each field as `echoField` cuts it.
 */
export function errorBody(error: unknown, status: number): { error: Record<string, unknown> } {
  if (!(error instanceof Error)) return { error: { code: 'internal', message: 'internal error' } };
  // A 500 is an error no table entry knows (a driver's, say: a PostgresError carries the
  // server's file, line, routine and the statement's parameters): nothing of it goes out.
  if (status === 500 || (status > 500 && !isCodedError(error))) return { error: { code: 'internal', message: 'internal error' } };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause' || key === 'stack' || key === 'code' || key === 'message' || typeof value === 'function') continue;
    fields[key] = echoField(value, 2);
  }
  return { error: { code: isCodedError(error) ? error.code : 'internal', message: bounded(error.message, MAX_MESSAGE), ...fields } };
}
