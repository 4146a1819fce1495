import type { Sql } from '@craig/db';
import type { FastifyInstance } from 'fastify';
import type { ArchiveRunner } from '@craig/retention';
import { DEFAULT_AUDIT_PAGE, listAudit, listDeadLetters, MAX_AUDIT_PAGE, type AuditQuery } from './audit-store.ts';
import { InvalidQueryError } from './errors.ts';

const EVENT_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const MAX_EVENT_TYPE = 255;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

type Query = Record<string, unknown>;

/** One value of a query parameter; a repeated parameter is refused by name. */
function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidQueryError(name, value, 'must be given once');
  return value;
}

function refuseUnknown(query: Query, known: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) throw new InvalidQueryError(name, query[name], `is not a parameter of this route (known: ${known.join(', ')})`);
  }
}

/** `limit`: a whole number 1…MAX_AUDIT_PAGE, default DEFAULT_AUDIT_PAGE. */
export function parseLimit(query: Query): number {
  const raw = single(query, 'limit');
  if (raw === undefined) return DEFAULT_AUDIT_PAGE;
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_AUDIT_PAGE) throw new InvalidQueryError('limit', raw, `must be a whole number from 1 to ${MAX_AUDIT_PAGE}`);
  return n;
}

/** The query of `GET /v1/audit`, validated: every problem names the parameter and its value. */
export function parseAuditQuery(query: Query): AuditQuery {
  refuseUnknown(query, ['eventType', 'since', 'limit']);
  const eventType = single(query, 'eventType');
  if (eventType !== undefined && (eventType.length > MAX_EVENT_TYPE || !EVENT_TYPE.test(eventType))) {
    throw new InvalidQueryError('eventType', eventType, 'must be an event type: dot-separated words of letters, digits, "_" or "-"');
  }
  const sinceRaw = single(query, 'since');
  let since: Date | undefined;
  if (sinceRaw !== undefined) {
    since = ISO_DATE.test(sinceRaw) ? new Date(sinceRaw) : undefined;
    if (!since || Number.isNaN(since.getTime())) throw new InvalidQueryError('since', sinceRaw, 'must be an ISO 8601 date or timestamp (2026-01-31 or 2026-01-31T12:00:00Z)');
  }
  return { ...(eventType === undefined ? {} : { eventType }), ...(since === undefined ? {} : { since }), limit: parseLimit(query) };
}

/** The service's own routes; health, readiness, metrics and the event admin routes come from `@craig/service`. */
export function registerRoutes(app: FastifyInstance, deps: { readonly sql: Sql; readonly archive: ArchiveRunner }): void {
  app.get('/v1/audit', async (request) => ({ events: await listAudit(deps.sql, parseAuditQuery(request.query as Query)) }));

  app.get('/v1/dead-letters', async (request) => {
    const query = request.query as Query;
    refuseUnknown(query, ['limit']);
    return { deadLetters: await listDeadLetters(deps.sql, parseLimit(query)) };
  });

  // Admin (bearer token): one archive cycle now. 409 archive_lease_held when another archiver runs.
  app.post('/v1/admin/archive/run', async () => {
    const report = await deps.archive.runNow();
    return {
      status: report.status,
      ms: report.ms,
      tables: report.tables.map((t) => ({ table: t.table, rows: t.rows, batches: t.batches, bytes: t.bytes, outcome: t.outcome, ...(t.error ? { error: t.error } : {}) })),
    };
  });
}
