import type { Sql } from '@craig/db';
import type { ArchiveRunner } from '@craig/retention';
import { limitParam, queryParam, refuseUnknownParams, type QueryParams } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { InvalidBodyError, InvalidQueryError, NotFoundError } from './errors.ts';
import { DEFAULT_EVALUATION_PAGE, listEvaluations, MAX_EVALUATION_PAGE, OUTCOMES, type EvaluationQuery } from './evaluation-store.ts';
import { createPreview, DEFAULT_PREVIEW_SAMPLE, MAX_PREVIEW_SAMPLE } from './preview.ts';
import { parseRules } from './rule-language.ts';
import { createSnapshot, latestSnapshot } from './snapshot-store.ts';
import type { Outcome } from './rule-language.ts';

const EVENT_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const MAX_EVENT_TYPE = 255;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;
/** A rule set's name (the schema's check says the same). */
export const RULE_SET_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

type Query = QueryParams;

/** `limit`: a whole number 1…MAX_EVALUATION_PAGE, default DEFAULT_EVALUATION_PAGE. */
export function parseLimit(query: Query): number {
  return limitParam(query, { max: MAX_EVALUATION_PAGE, fallback: DEFAULT_EVALUATION_PAGE });
}

/** The query of `GET /v1/evaluations`, validated: every problem names the parameter and its value. */
export function parseEvaluationQuery(query: Query): EvaluationQuery {
  refuseUnknownParams(query, ['eventType', 'outcome', 'since', 'limit']);
  const eventType = queryParam(query, 'eventType');
  if (eventType !== undefined && (eventType.length > MAX_EVENT_TYPE || !EVENT_TYPE.test(eventType))) {
    throw new InvalidQueryError('eventType', eventType, 'must be an event type: dot-separated words of letters, digits, "_" or "-"');
  }
  const outcome = queryParam(query, 'outcome');
  if (outcome !== undefined && !(OUTCOMES as readonly string[]).includes(outcome)) throw new InvalidQueryError('outcome', outcome, `must be one of ${OUTCOMES.join(', ')}`);
  const sinceRaw = queryParam(query, 'since');
  let since: Date | undefined;
  if (sinceRaw !== undefined) {
    since = ISO_DATE.test(sinceRaw) ? new Date(sinceRaw) : undefined;
    if (!since || Number.isNaN(since.getTime())) throw new InvalidQueryError('since', sinceRaw, 'must be an ISO 8601 date or timestamp (2026-01-31 or 2026-01-31T12:00:00Z)');
  }
  return {
    ...(eventType === undefined ? {} : { eventType }),
    ...(outcome === undefined ? {} : { outcome: outcome as Outcome }),
    ...(since === undefined ? {} : { since }),
    limit: parseLimit(query),
  };
}

/** The `:name` of a rule-set route. */
export function parseRuleSetName(value: unknown): string {
  if (typeof value !== 'string' || !RULE_SET_NAME.test(value)) throw new InvalidBodyError('name', value, 'must be a rule set name: 1 to 63 lowercase letters, digits, "_" or "-", starting with a letter or digit');
  return value;
}

function objectBody(body: unknown, known: readonly string[]): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidBodyError('body', body, 'must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) throw new InvalidBodyError(key, (body as Record<string, unknown>)[key], `is not a field of this request (known: ${known.join(', ')})`);
  }
  return body as Record<string, unknown>;
}

/** `createdBy`: who posted a snapshot (free text, 1…100 characters, no control characters); default `admin`. */
function parseActor(value: unknown): string {
  if (value === undefined) return 'admin';
  // eslint-disable-next-line no-control-regex -- the refusal is of control characters
  if (typeof value !== 'string' || value.length < 1 || value.length > 100 || /[\u0000-\u001f\u007f]/.test(value)) throw new InvalidBodyError('createdBy', value, 'must be 1 to 100 characters without control characters');
  return value;
}

/** The body of `POST /v1/rule-sets/:name/snapshots`. */
export function parseSnapshotBody(body: unknown): { readonly rules: ReturnType<typeof parseRules>; readonly createdBy: string } {
  const b = objectBody(body, ['rules', 'createdBy']);
  return { rules: parseRules(b.rules), createdBy: parseActor(b.createdBy) };
}

/** The body of `POST /v1/rule-sets/:name/previews`. */
export function parsePreviewBody(body: unknown): { readonly snapshotId: string; readonly sample: number } {
  const b = objectBody(body, ['snapshotId', 'sample']);
  const id = b.snapshotId;
  const snapshotId = typeof id === 'number' && Number.isSafeInteger(id) && id >= 1 ? String(id) : typeof id === 'string' && /^[1-9]\d{0,17}$/.test(id) ? id : undefined;
  if (snapshotId === undefined) throw new InvalidBodyError('snapshotId', id, 'must be a snapshot id (a positive whole number)');
  const sample = b.sample ?? DEFAULT_PREVIEW_SAMPLE;
  if (typeof sample !== 'number' || !Number.isInteger(sample) || sample < 1 || sample > MAX_PREVIEW_SAMPLE) throw new InvalidBodyError('sample', b.sample, `must be a whole number from 1 to ${MAX_PREVIEW_SAMPLE}`);
  return { snapshotId, sample };
}

/** The service's own routes; health, readiness, metrics and the event admin routes come from `@craig/service`. */
export function registerRoutes(app: FastifyInstance, deps: { readonly sql: Sql; readonly archive: ArchiveRunner }): void {
  // The rule-set writes live outside /v1/admin/ but need the admin token all the same
  // (`config.admin`: `@craig/service` checks it before the body is read, and audits the request).
  // Room for the largest rule set (256 KiB as compact JSON, more pretty-printed).
  app.post('/v1/rule-sets/:name/snapshots', { config: { admin: true }, bodyLimit: 512 * 1024 }, async (request, reply) => {
    const ruleSet = parseRuleSetName((request.params as { name?: unknown }).name);
    const { rules, createdBy } = parseSnapshotBody(request.body);
    const snapshot = await createSnapshot(deps.sql, { ruleSet, rules, createdBy });
    return reply.code(201).send({ snapshot });
  });

  app.get('/v1/rule-sets/:name/snapshots/latest', async (request) => {
    const ruleSet = parseRuleSetName((request.params as { name?: unknown }).name);
    const snapshot = await latestSnapshot(deps.sql, ruleSet);
    if (!snapshot) throw new NotFoundError('rule set', ruleSet);
    return { snapshot };
  });

  app.post('/v1/rule-sets/:name/previews', { config: { admin: true }, bodyLimit: 1024 }, async (request, reply) => {
    const ruleSet = parseRuleSetName((request.params as { name?: unknown }).name);
    const { snapshotId, sample } = parsePreviewBody(request.body);
    return reply.code(201).send({ preview: await createPreview(deps.sql, { ruleSet, snapshotId, sample }) });
  });

  app.get('/v1/evaluations', async (request) => ({ evaluations: await listEvaluations(deps.sql, parseEvaluationQuery(request.query as Query)) }));

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
