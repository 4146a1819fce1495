import type { Sql } from '@craig/db';
import type { FastifyInstance } from 'fastify';
import { InvalidRequestError } from './errors.ts';
import { parseImportRequest } from './import-request.ts';
import { DEFAULT_QUEUE_PAGE, DEFAULT_SETTLE_BATCH, listQueue, MAX_QUEUE_PAGE, MAX_SETTLE_BATCH, QUEUE_STATUSES, recordImport, settleMatched, type QueueStatus } from './reconcile-store.ts';
import type { SweepRunner } from './sweep-runner.ts';

type Fields = Record<string, unknown>;

function refuseUnknown(fields: Fields, known: readonly string[]): void {
  for (const name of Object.keys(fields)) {
    if (!known.includes(name)) throw new InvalidRequestError(name, fields[name], `is not a parameter of this route (known: ${known.join(', ')})`);
  }
}

/** A whole number 1…max from a query string or a JSON body; default when absent. */
export function parseLimit(value: unknown, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidRequestError('limit', value, `must be a whole number from 1 to ${max}`);
  return n;
}

/** The query of `GET /v1/reconcile-queue`: `status` one of the four, `limit` 1…500. */
export function parseQueueQuery(query: Fields): { status?: QueueStatus; limit: number } {
  refuseUnknown(query, ['status', 'limit']);
  const status = query.status;
  if (status !== undefined && !(QUEUE_STATUSES as readonly unknown[]).includes(status)) {
    throw new InvalidRequestError('status', status, `must be one of ${QUEUE_STATUSES.join(', ')}`);
  }
  return { ...(status === undefined ? {} : { status: status as QueueStatus }), limit: parseLimit(query.limit, MAX_QUEUE_PAGE, DEFAULT_QUEUE_PAGE) };
}

/** The service's own routes; health, readiness, metrics and the event admin routes come from `@craig/service`. */
export function registerRoutes(app: FastifyInstance, deps: { readonly sql: Sql; readonly sweep: SweepRunner }): void {
  // Validated whole before anything is written: a bad line is a 400 naming it, and nothing is recorded.
  // 5,000 lines of up to 200 + 15 characters, as JSON, with room to spare.
  app.post('/v1/subsidy-imports', { bodyLimit: 2 * 1024 * 1024 }, async (request, reply) => {
    const result = await recordImport(deps.sql, parseImportRequest(request.body));
    return reply.code(201).send({ import: result });
  });

  app.get('/v1/reconcile-queue', async (request) => ({ rows: await listQueue(deps.sql, parseQueueQuery(request.query as Fields)) }));

  // Admin (bearer token): settle matched rows, one subsidy.settled event per row in the same transaction.
  app.post('/v1/admin/reconcile/settle', async (request) => {
    const body = (request.body ?? {}) as Fields;
    if (typeof body !== 'object' || Array.isArray(body)) throw new InvalidRequestError('body', body, 'must be a JSON object { limit? }');
    refuseUnknown(body, ['limit']);
    const { settled, rows } = await settleMatched(deps.sql, parseLimit(body.limit, MAX_SETTLE_BATCH, DEFAULT_SETTLE_BATCH));
    return { settled, rows };
  });

  // Admin: one sweep of settled rows now. 409 sweep_lock_held while another sweeper runs.
  app.post('/v1/admin/reconcile/sweep', async () => {
    const result = await deps.sweep.runNow();
    return { status: result.status, deleted: result.deleted, batches: result.batches, ms: result.ms, ...(result.latch ? { latchedAt: result.latch.latchedAt } : {}) };
  });
}
