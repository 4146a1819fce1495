import type { Sql } from '@craig/db';
import { limitParam, queryParam, refuseUnknownParams, type QueryParams } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import type { ArchiveRunner } from '@craig/retention';
import { DEFAULT_AUDIT_PAGE, listAudit, listDeadLetters, MAX_AUDIT_PAGE, type AuditQuery } from './audit-store.ts';
import { InvalidQueryError } from './errors.ts';

const EVENT_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const MAX_EVENT_TYPE = 255;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

type Query = QueryParams;

/** `limit`: a whole number 1…MAX_AUDIT_PAGE, default DEFAULT_AUDIT_PAGE. */
export function parseLimit(query: Query): number {
  return limitParam(query, { max: MAX_AUDIT_PAGE, fallback: DEFAULT_AUDIT_PAGE });
}

/** The query of `GET /v1/audit`, validated: every problem names the parameter and its value. */
export function parseAuditQuery(query: Query): AuditQuery {
  refuseUnknownParams(query, ['eventType', 'since', 'limit']);
  const eventType = queryParam(query, 'eventType');
  if (eventType !== undefined && (eventType.length > MAX_EVENT_TYPE || !EVENT_TYPE.test(eventType))) {
    throw new InvalidQueryError('eventType', eventType, 'must be an event type: dot-separated words of letters, digits, "_" or "-"');
  }
  const sinceRaw = queryParam(query, 'since');
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
    refuseUnknownParams(query, ['limit']);
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
