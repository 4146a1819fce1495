import type { Sql } from '@craig/db';
import type { ArchiveRunner } from '@craig/retention';
import { limitParam, queryParam, refuseUnknownParams, type QueryParams } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { InvalidQueryError, ScreeningNotFoundError } from './errors.ts';
import { getScreening, invalidateScreening } from './screenings.ts';
import { cancelSendJob, DEFAULT_SEND_JOB_PAGE, listSendJobs, MAX_SEND_JOB_PAGE, SEND_JOB_STATUSES, type SendJobStatus } from './send-jobs.ts';

type Query = QueryParams;

/** The query of `GET /v1/send-jobs`: `status` one of the five, `limit` 1…500 (default 100). */
export function parseSendJobQuery(query: Query): { status?: SendJobStatus; limit: number } {
  refuseUnknownParams(query, ['status', 'limit']);
  const status = queryParam(query, 'status');
  if (status !== undefined && !(SEND_JOB_STATUSES as readonly string[]).includes(status)) {
    throw new InvalidQueryError('status', status, `must be one of ${SEND_JOB_STATUSES.join(', ')}`);
  }
  const limit = limitParam(query, { max: MAX_SEND_JOB_PAGE, fallback: DEFAULT_SEND_JOB_PAGE });
  return { ...(status === undefined ? {} : { status: status as SendJobStatus }), limit };
}

/** A path id: a positive bigint in decimal. */
export function parseId(raw: unknown): string {
  if (typeof raw !== 'string' || !/^[1-9]\d{0,17}$/.test(raw)) throw new InvalidQueryError('id', raw, 'must be a positive whole number');
  return raw;
}

/** The service's own routes; health, readiness, metrics and the event admin routes come from `@craig/service`. */
export function registerRoutes(app: FastifyInstance, deps: { readonly sql: Sql; readonly archive: ArchiveRunner }): void {
  app.get('/v1/send-jobs', async (request) => ({ sendJobs: await listSendJobs(deps.sql, parseSendJobQuery(request.query as Query)) }));

  // 409 send_job_terminal when the job finished (the guarded UPDATE matched nothing), 404 when absent.
  app.post('/v1/send-jobs/:id/cancel', async (request) => ({ sendJob: await cancelSendJob(deps.sql, parseId((request.params as { id: unknown }).id)) }));

  app.get('/v1/screenings/:id', async (request) => {
    const id = parseId((request.params as { id: unknown }).id);
    const screening = await getScreening(deps.sql, id);
    if (!screening) throw new ScreeningNotFoundError(id);
    return { screening };
  });

  // The writer-side refusal: 409 screening_past_freshness for a completed run past the horizon.
  app.post('/v1/screenings/:id/invalidate', async (request) => ({ screening: await invalidateScreening(deps.sql, parseId((request.params as { id: unknown }).id)) }));

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
