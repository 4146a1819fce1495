import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { adminTokenCheck, UnauthorizedError } from './admin-auth.ts';
import { auditOf, finishAudit, startAudit, summarize } from './admin-audit.ts';
import { errorBody, httpStatusFor } from './http-errors.ts';
import { withTimeout } from './internal/timeout.ts';
import { InvalidRequestError } from './validation.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route needs the admin token (every route under `/v1/admin/` does without saying so):
     * checked before the body is read, and every request to it is audited.
     */
    admin?: boolean;
  }
}

export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

export interface HttpAppOptions {
  readonly service: string;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Bearer token for every route under `/v1/admin/` and every route with `config: { admin: true }`. */
  readonly adminToken: string;
  /** Run by `/readyz`; any failure answers 503 naming the check. */
  readonly readiness?: readonly ReadinessCheck[];
  /**
   * Longest a readiness check may take before `/readyz` counts it failed (default
   * {@link READINESS_TIMEOUT_MS}): a database that accepts connections but never answers makes
   * the probe a prompt 503 naming the check, not a request that hangs until the prober gives up.
   */
  readonly readinessTimeoutMs?: number;
  /**
   * Largest request body of a route that declares no `bodyLimit` of its own (default 16 KiB).
   * A route that takes more says so next to its schema (`{ bodyLimit: 256 * 1024 }`).
   */
  readonly bodyLimitBytes?: number;
}

/** Default longest wait for one readiness check. */
export const READINESS_TIMEOUT_MS = 2000;

/** Default request body limit of a route that declares none. */
export const DEFAULT_BODY_LIMIT_BYTES = 16 * 1024;

/** One route of an app: what `listRoutes` returns. */
export interface RouteEntry {
  readonly method: string;
  readonly url: string;
  /** Needs the admin token (and is audited). */
  readonly admin: boolean;
  /** The route's request body limit in bytes. */
  readonly bodyLimit: number;
}

const routeTables = new WeakMap<FastifyInstance, RouteEntry[]>();
const handled = new WeakMap<FastifyInstance, { count: number }>();

/**
 * How many requests have reached a route handler (past auth, routing, body parsing, limits and
 * schema validation). The fuzz tests read it to know which refusals happened before any
 * handler code ran.
 */
export function handledRequests(app: FastifyInstance): number {
  return handled.get(app)?.count ?? 0;
}

/**
 * Every route the app has, one entry per method (including the HEAD twin Fastify adds to each
 * GET), as registered: the fuzz tests enumerate them so that a new route cannot go untested.
 */
export function listRoutes(app: FastifyInstance): readonly RouteEntry[] {
  const table = routeTables.get(app);
  if (!table) throw new TypeError('listRoutes: not an app made by createHttpApp');
  return [...table];
}

const ADMIN_PREFIX = '/v1/admin/';

/** Where the first string or key holding U+0000 is (`body.lines[3].amount`), walked without recursion (a body can be 100,000 deep). */
function nulPath(root: unknown): string | undefined {
  const stack: Array<{ value: unknown; path: string }> = [{ value: root, path: 'body' }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: path.length > 200 ? path : `${path}[${i}]` });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        if (key.includes('\u0000')) return `${path}.${JSON.stringify(key)}`;
        stack.push({ value: child, path: path.length > 200 ? path : `${path}.${key}` });
      }
    }
  }
  return undefined;
}

// Fastify's own refusals (malformed JSON, body too large, wrong content type, a bad URL) carry a
// status; they get the code that status has in HTTP_STATUS_BY_CODE, so every error body is typed
// the same way and its code always names its status.
const FRAMEWORK_CODES: Readonly<Record<number, string>> = { 413: 'payload_too_large', 414: 'uri_too_long', 415: 'unsupported_media_type' };

/**
 * A Fastify app with what every craig service exposes: `/healthz` (the process runs),
 * `/readyz` (its dependencies answer), `/metrics` (Prometheus), bearer auth and an audit line on
 * the admin routes, per-route body limits, and errors mapped to statuses by code in one place
 * (`http-errors.ts`).
 */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  // Widened once so the app is the default FastifyInstance type, not one generic over pino's Logger.
  const loggerInstance: FastifyBaseLogger = options.logger;
  const defaultBodyLimit = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const app: FastifyInstance = Fastify({
    loggerInstance,
    bodyLimit: defaultBodyLimit,
    logController: new LogController({ disableRequestLogging: true }),
    // A bad percent-encoding or an over-long path parameter is refused before routing: the
    // same typed body as every other refusal instead of Fastify's own.
    frameworkErrors: (error, request, reply) => void sendError(error, request, reply),
  });
  const table: RouteEntry[] = [];
  routeTables.set(app, table);

  // Fastify's JSON parser (prototype and constructor poisoning refused), plus one refusal every
  // route needs: PostgreSQL text cannot hold U+0000, so a string (or key) carrying it would
  // fail its INSERT as a server error (22P05/22021). Refused here, naming where it is.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, done) => {
    const body = typeof raw === 'string' ? raw : raw.toString('utf8');
    void parseJson(request, body, (error: Error | null, value?: unknown) => {
      if (error) return done(error, undefined);
      const at = body.includes('u0000') ? nulPath(value) : undefined;
      if (at === undefined) return done(null, value);
      done(new InvalidRequestError(at, '[text with U+0000]', [`${at}: must not contain the NUL character (U+0000): PostgreSQL text cannot store it`]), undefined);
    });
  });
  const token = adminTokenCheck(options.adminToken);

  app.addHook('onRoute', (route) => {
    const admin = route.url.startsWith(ADMIN_PREFIX) || route.config?.admin === true;
    // Normalized onto the route so the onRequest check below reads one flag, whatever the URL looked like.
    if (admin) route.config = { ...route.config, admin: true };
    for (const method of [route.method].flat()) table.push({ method, url: route.url, admin, bodyLimit: route.bodyLimit ?? defaultBodyLimit });
  });

  // Decided by the matched route, never by the raw URL: the router decodes percent-escapes
  // (`/v1/%61dmin/…` is `/v1/admin/…`), so a prefix test on `request.url` can be walked around.
  // An unknown path under the admin prefix answers 401 too, so the admin routes cannot be
  // enumerated without the token. Runs before the body is read: a refused caller's body is
  // never parsed.
  app.addHook('onRequest', async (request) => {
    const admin = request.routeOptions.config?.admin === true || (request.is404 && request.url.startsWith(ADMIN_PREFIX));
    if (!admin) return;
    const state = startAudit(request, token.presented(request.headers.authorization));
    state.token = token.verify(request.headers.authorization);
  });

  // What a 2xx admin answer said, bounded, for the audit line.
  app.addHook('preSerialization', async (request, reply, payload) => {
    const state = auditOf(request);
    if (state && reply.statusCode < 300) state.result = summarize(payload, 3);
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => finishAudit(request, reply, options.registry));

  const counter = { count: 0 };
  handled.set(app, counter);
  app.addHook('preHandler', async () => {
    counter.count++;
  });

  async function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const e = error as { validation?: unknown; statusCode?: unknown; code?: unknown; message?: string };
    let status: number;
    let body: { error: Record<string, unknown> };
    if (e.validation !== undefined) {
      status = 400;
      body = errorBody(Object.assign(new Error(e.message), { code: 'invalid_request', retryable: false }), status);
    } else if (typeof e.code === 'string' && e.code.startsWith('FST_') && typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
      status = FRAMEWORK_CODES[e.statusCode] === undefined ? 400 : e.statusCode;
      body = errorBody(Object.assign(new Error(e.message), { code: FRAMEWORK_CODES[status] ?? 'invalid_request', retryable: false }), status);
    } else {
      status = httpStatusFor(error);
      body = errorBody(error, status);
    }
    const state = auditOf(request);
    if (state) state.error = String(body.error.code);
    if (status >= 500) request.log.error({ err: error, route: request.routeOptions.url }, 'request failed');
    if (error instanceof UnauthorizedError) void reply.header('www-authenticate', `Bearer realm="${options.service}"`);
    await reply.code(status).send(body);
  }

  app.setErrorHandler(sendError);

  app.setNotFoundHandler(async (request, reply) => {
    await reply.code(404).send({ error: { code: 'not_found', message: `no route ${request.method} ${summarize(request.url, 0) as string}`, retryable: false } });
  });

  app.get('/healthz', async () => ({ status: 'ok', service: options.service }));

  const readinessTimeoutMs = options.readinessTimeoutMs ?? READINESS_TIMEOUT_MS;
  if (!Number.isFinite(readinessTimeoutMs) || readinessTimeoutMs <= 0) throw new RangeError(`readinessTimeoutMs must be a positive number of milliseconds: ${readinessTimeoutMs}`);
  app.get('/readyz', async (_request, reply) => {
    const results = await Promise.all(
      (options.readiness ?? []).map(async (c) => {
        try {
          await withTimeout(c.check(), readinessTimeoutMs, () => new Error(`did not answer within ${readinessTimeoutMs} ms`));
          return { name: c.name, ok: true };
        } catch (error) {
          return { name: c.name, ok: false, error: (error as Error).message };
        }
      }),
    );
    const ok = results.every((r) => r.ok);
    await reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', service: options.service, checks: results });
  });

  app.get('/metrics', async (_request, reply) => {
    await reply.header('content-type', options.registry.contentType).send(await options.registry.metrics());
  });

  return app;
}
