import { InvalidRequestError } from './errors.ts';

/** Most lines one import may carry: the whole import is one transaction. */
export const MAX_IMPORT_LINES = 5000;
const MAX_TEXT = 200;
/** numeric(14,2): at most 12 integer digits and 2 decimals, never negative. */
const AMOUNT = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,2})?$/;
const PERIOD = /^([0-9]{4})-(0[1-9]|1[0-2])(-01)?$/;

/** `POST /v1/subsidy-imports`, validated. */
export interface ImportRequest {
  readonly source: string;
  /** The first day of the month, `YYYY-MM-01`. */
  readonly period: string;
  readonly lines: ReadonlyArray<{ readonly placementId: string; /** Decimal text with at most 2 decimals. */ readonly amount: string }>;
}

function refuseUnknown(value: Record<string, unknown>, known: readonly string[], at: string): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidRequestError(at ? `${at}.${key}` : key, value[key], `is not a field of this request (known: ${known.join(', ')})`);
  }
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TEXT || value.trim() !== value) {
    throw new InvalidRequestError(field, value, `must be a string of 1 to ${MAX_TEXT} characters without surrounding spaces`);
  }
  return value;
}

/**
 * An amount as the database will store it: a JSON number or a decimal string, non-negative,
 * at most 12 integer digits and 2 decimals. Nothing is rounded: `12.345` is refused.
 */
export function parseAmount(value: unknown, field: string): string {
  const raw = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof raw !== 'string' || !AMOUNT.test(raw)) {
    throw new InvalidRequestError(field, value, 'must be a non-negative amount with at most 12 digits before the point and 2 after (1250 or "1250.00")');
  }
  return raw;
}

/** A month: `YYYY-MM` or `YYYY-MM-01`, returned as `YYYY-MM-01`. */
export function parsePeriod(value: unknown): string {
  const match = typeof value === 'string' ? PERIOD.exec(value) : null;
  if (!match || match[1] === '0000') throw new InvalidRequestError('period', value, 'must be a month: YYYY-MM (or its first day, YYYY-MM-01)');
  return `${match[1]}-${match[2]}-01`;
}

/**
 * Validate an import body before anything is written. The first problem is thrown as
 * `InvalidRequestError` whose `field` names the line (`lines[3].amount`) and whose `value` is
 * the offending value.
 */
export function parseImportRequest(body: unknown): ImportRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidRequestError('body', body, 'must be a JSON object { source, period, lines }');
  const b = body as Record<string, unknown>;
  refuseUnknown(b, ['source', 'period', 'lines'], '');
  const source = text(b.source, 'source');
  const period = parsePeriod(b.period);
  if (!Array.isArray(b.lines)) throw new InvalidRequestError('lines', b.lines, 'must be an array of { placementId, amount }');
  if (b.lines.length < 1 || b.lines.length > MAX_IMPORT_LINES) {
    throw new InvalidRequestError('lines', `${b.lines.length} lines`, `must hold 1 to ${MAX_IMPORT_LINES} lines`);
  }
  const lines = b.lines.map((line: unknown, i: number) => {
    const at = `lines[${i}]`;
    if (line === null || typeof line !== 'object' || Array.isArray(line)) throw new InvalidRequestError(at, line, 'must be an object { placementId, amount }');
    const l = line as Record<string, unknown>;
    refuseUnknown(l, ['placementId', 'amount'], at);
    return { placementId: text(l.placementId, `${at}.placementId`), amount: parseAmount(l.amount, `${at}.amount`) };
  });
  return { source, period, lines };
}
