// The audit of admin requests: one structured warn line and one counter increment per request
// to an admin route (replay, redrive, archive run, settle, sweep, rule-set writes, and every
// refused attempt), recording who (token fingerprint, remote address), when, what (the route,
// its parameters and a bounded summary of the body) and the outcome.
//
// Why a log line and not a table: the log pipeline is outside the database the operation
// touches, so a process that can rewrite that database cannot rewrite its audit trail, and a
// refused request leaves the database exactly as it was (the fuzz tests check that). The
// trail is as durable as the log shipping; see docs/security.md.
import { perRegistry } from '@craig/mq';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';

/** What the audit line records of a request, once the route has answered. */
export interface AdminAuditState {
  readonly at: Date;
  token: string | null;
  /** The error code of a refusal or failure. */
  error?: string;
  /** A bounded summary of a 2xx answer. */
  result?: unknown;
}

const auditState = new WeakMap<FastifyRequest, AdminAuditState>();

export function startAudit(request: FastifyRequest, token: string | null): AdminAuditState {
  const state: AdminAuditState = { at: new Date(), token };
  auditState.set(request, state);
  return state;
}

export function auditOf(request: FastifyRequest): AdminAuditState | undefined {
  return auditState.get(request);
}

const adminRequests = perRegistry(
  (registry: Registry) =>
    new Counter({
      name: 'admin_requests_total',
      help: 'Requests to admin routes by route pattern (unmatched for an unknown /v1/admin/ path) and outcome: ok (2xx), refused (4xx other than 401), unauthorized (401), failed (5xx).',
      labelNames: ['route', 'outcome'],
      registers: [registry],
    }),
);

const MAX_TEXT = 100;
const MAX_ITEMS = 10;

/**
 * A bounded summary of a value for a log line: strings cut to 100 characters, at most 10 keys or
 * items per level (an array keeps its count), nothing below `depth` levels. An audit line is a
 * record of what was asked, not a copy of a request body.
 */
export function summarize(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.length > MAX_TEXT ? `${value.slice(0, MAX_TEXT)}… (${value.length} characters)` : value;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    if (depth <= 0) return `[${value.length} items]`;
    const items = value.slice(0, MAX_ITEMS).map((v) => summarize(v, depth - 1));
    return value.length > MAX_ITEMS ? { count: value.length, first: items } : items;
  }
  if (depth <= 0) return '[object]';
  const out: Record<string, unknown> = {};
  const keys = Object.keys(value);
  for (const key of keys.slice(0, MAX_ITEMS)) out[summarize(key, 0) as string] = summarize((value as Record<string, unknown>)[key], depth - 1);
  if (keys.length > MAX_ITEMS) out['…'] = `${keys.length - MAX_ITEMS} more keys`;
  return out;
}

function outcomeOf(status: number): 'ok' | 'refused' | 'unauthorized' | 'failed' {
  if (status >= 500) return 'failed';
  if (status === 401) return 'unauthorized';
  return status >= 400 ? 'refused' : 'ok';
}

/** The `onResponse` half: the audit line (warn) and the counter, for a request `startAudit` marked. */
export function finishAudit(request: FastifyRequest, reply: FastifyReply, registry: Registry): void {
  const state = auditState.get(request);
  if (!state) return;
  const route = request.routeOptions.url ?? 'unmatched';
  const outcome = outcomeOf(reply.statusCode);
  adminRequests(registry).inc({ route, outcome });
  request.log.warn(
    {
      audit: 'admin',
      action: `${request.method} ${route}`,
      at: state.at.toISOString(),
      caller: { token: state.token, remoteAddress: request.ip },
      request: {
        url: summarize(request.url, 0),
        params: summarize(request.params, 1),
        query: summarize(request.query, 1),
        body: summarize(request.body, 2),
      },
      outcome,
      status: reply.statusCode,
      ...(state.error === undefined ? {} : { error: state.error }),
      ...(state.result === undefined ? {} : { result: state.result }),
      ms: Math.round(reply.elapsedTime),
    },
    `admin ${request.method} ${route}: ${outcome}`,
  );
}
