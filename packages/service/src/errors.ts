/**
 * The base of a service's own errors: a stable `code` (its HTTP status is in
 * `HTTP_STATUS_BY_CODE`) and whether a retry may succeed. Each service subclasses it once
 * (`SecurityError`, `RulesError`, …) so callers can tell its refusals apart.
 */
export class ServiceError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

const PREVIEW_ITEMS = 20;

// A copy of a value at most `depth` levels deep, at most 20 items or keys per level, strings cut:
// what a preview may show of a value that can be 100,000 levels deep or 10 MB long.
function shallow(value: unknown, depth: number, max: number): unknown {
  if (typeof value === 'string') return value.length > max ? `${value.slice(0, max)}…` : value;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') return typeof value === 'symbol' || typeof value === 'function' ? String(value) : value;
  if (Array.isArray(value)) return depth <= 0 ? '[array]' : value.slice(0, PREVIEW_ITEMS).map((v) => shallow(v, depth - 1, max));
  if (depth <= 0) return '[object]';
  return Object.fromEntries(Object.keys(value).slice(0, PREVIEW_ITEMS).map((k) => [k.slice(0, max), shallow((value as Record<string, unknown>)[k], depth - 1, max)]));
}

/**
 * A value as an error message shows it: JSON of a bounded copy (three levels, 20 items or keys
 * each), cut to `max` characters. Never throws and never recurses past three levels, whatever the
 * input: a message is built before anything else can bound it.
 */
export function previewValue(value: unknown, max = 200): string {
  const text = value === undefined ? 'undefined' : (JSON.stringify(shallow(value, 3, max)) ?? 'undefined');
  return text.length > max ? `${text.slice(0, max)}… (${text.length > 10 * max ? 'more' : `${text.length} characters`})` : text;
}

/** A query parameter is malformed, repeated, unknown or out of range (`invalid_request`, 400), named with its value. */
export class InvalidQueryError extends ServiceError {
  readonly parameter: string;
  readonly value: unknown;
  constructor(parameter: string, value: unknown, problem: string) {
    super('invalid_request', `query parameter ${parameter}=${previewValue(value)} ${problem}`);
    this.parameter = parameter;
    this.value = value;
  }
}

/** A parsed query string (Fastify's `request.query`). */
export type QueryParams = Readonly<Record<string, unknown>>;

/** One value of a query parameter, or `undefined`; a repeated parameter is refused by name. */
export function queryParam(query: QueryParams, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidQueryError(name, value, 'must be given once');
  return value;
}

/** Refuse any parameter the route does not know, naming it and the ones it does. */
export function refuseUnknownParams(query: QueryParams, known: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) throw new InvalidQueryError(name, query[name], `is not a parameter of this route (known: ${known.join(', ')})`);
  }
}

/** `limit`: a whole number from 1 to `max`, `fallback` when absent ("1e2", "0", "-1", "1.5" are refused). */
export function limitParam(query: QueryParams, bounds: { readonly max: number; readonly fallback: number }): number {
  const raw = queryParam(query, 'limit');
  if (raw === undefined) return bounds.fallback;
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > bounds.max) throw new InvalidQueryError('limit', raw, `must be a whole number from 1 to ${bounds.max}`);
  return n;
}
