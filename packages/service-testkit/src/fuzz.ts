// Property tests of a service's whole HTTP surface: for every route the app has (from
// `listRoutes`, so a new route cannot be missed), random methods, paths, query strings, headers
// and bodies, each answered in bounded time with a 2xx, or a 4xx whose body is the typed error
// body (its code names its status), and with the database unchanged by every refused request.
import type { Sql } from '@craig/db';
import { handledRequests, HTTP_STATUS_BY_CODE, listRoutes, type RouteEntry } from '@craig/service';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { authArbitrary, bodyArbitrary, CONTENT_TYPES, METHODS, queryArbitrary, segmentArbitrary, shapedObject } from './fuzz-inputs.ts';

export { field, hostileScalar, shapedObject } from './fuzz-inputs.ts';

/** What a route's valid-looking inputs are, to get cases past the first refusal. */
export interface RouteShape {
  /** Values of path parameters that mean something (existing ids), by parameter name. */
  readonly params?: Readonly<Record<string, fc.Arbitrary<string>>>;
  /** Query parameters the route knows, with plausible values. */
  readonly query?: Readonly<Record<string, fc.Arbitrary<string>>>;
  /** A body shaped like the route's (built with `shapedObject` / `field`, so often wrong). */
  readonly body?: fc.Arbitrary<unknown>;
  /**
   * The route's handler takes no input and is expensive (an archive cycle, a sweep): only about
   * one case in twenty carries the right token, so the 1,000 cases still reach it ~50 times.
   */
  readonly costly?: boolean;
}

/** `'<METHOD> <url pattern>'` → shape, one for every route except the HEAD twins (they take their GET's). */
export type RouteShapes = Readonly<Record<string, RouteShape>>;

/** Cases per route: `CRAIG_FUZZ_RUNS`, default 1,000. */
export function fuzzRuns(): number {
  // eslint-disable-next-line no-restricted-properties -- a test tool's knob
  const raw = process.env.CRAIG_FUZZ_RUNS;
  return raw !== undefined && /^[1-9][0-9]{0,6}$/.test(raw) ? Number(raw) : 1000;
}

/**
 * The seed of a route's cases: `CRAIG_FUZZ_SEED` when set (to reproduce a run, with the `path`
 * fast-check prints), else fixed per service and route, so CI runs the same cases every time.
 */
export function fuzzSeed(label: string): number {
  // eslint-disable-next-line no-restricted-properties -- a test tool's knob
  const raw = process.env.CRAIG_FUZZ_SEED;
  if (raw !== undefined && /^-?[0-9]{1,10}$/.test(raw)) return Number(raw) | 0;
  let h = 0x811c9dc5;
  for (const ch of label) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return h | 0;
}

const fingerprintQueries = new WeakMap<Sql, string>();

/**
 * A cheap fingerprint of every table of the database (row count and the sum of a 64-bit hash of
 * each row's text, per table: no sort, unlike an ordered md5 aggregate), read through `sql` (the owner's pool, which sees every row). The statement is
 * built from the catalog once per pool (the fuzzed routes create no tables) and prepared.
 */
export async function databaseFingerprint(sql: Sql): Promise<string> {
  let query = fingerprintQueries.get(sql);
  if (query === undefined) {
    const tables = await sql<{ q: string }[]>`
      select format('select %L as t, count(*) as n, coalesce(sum(hashtextextended(x::text, 0)::numeric), 0)::text as h from %I.%I x', n.nspname || '.' || c.relname, n.nspname, c.relname) as q
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
      order by n.nspname, c.relname`;
    query = tables.length === 0 ? 'select null as t, 0 as n, null as h' : tables.map((t) => t.q).join(' union all ');
    fingerprintQueries.set(sql, query);
  }
  const rows = await sql.unsafe<{ t: string; n: string; h: string }[]>(query, [], { prepare: true });
  return rows.map((r) => `${r.t}:${r.n}:${r.h}`).join('\n');
}

export interface FuzzTarget {
  readonly app: FastifyInstance;
  /** A pool that sees every row of the service's database (the owner's: `h.db.sql`). */
  readonly owner: Sql;
  readonly adminToken: string;
  /** A label for seeds and messages (the service's name). */
  readonly service: string;
}

export interface FuzzCase {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: string;
  readonly payload: Buffer | string | undefined;
}

/** The routes to fuzz: every route of the app, with the shape of each (a HEAD twin takes its GET's). */
export function routesWithShapes(app: FastifyInstance, shapes: RouteShapes): { routes: readonly RouteEntry[]; missing: string[]; stale: string[] } {
  const routes = listRoutes(app);
  const keys = new Set(routes.filter((r) => r.method !== 'HEAD').map((r) => `${r.method} ${r.url}`));
  return { routes, missing: [...keys].filter((k) => !(k in shapes)), stale: Object.keys(shapes).filter((k) => !keys.has(k)) };
}

function caseArbitrary(route: RouteEntry | undefined, shape: RouteShape, token: string): fc.Arbitrary<FuzzCase> {
  const pattern = route?.url ?? '/v1/:a/:b';
  const params = [...pattern.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  const path = fc.tuple(...params.map((p) => segmentArbitrary(shape.params?.[p])), fc.oneof({ arbitrary: fc.constant(''), weight: 12 }, { arbitrary: fc.constantFrom('/', '//x', '/..', '%2F'), weight: 1 })).map((parts) => {
    let i = 0;
    return pattern.replace(/:([A-Za-z0-9_]+)/g, () => parts[i++]!) + parts.at(-1)!;
  });
  const unmatched = fc.oneof(
    fc.array(fc.oneof(fc.constantFrom('v1', 'admin', 'events', 'replay', 'V1', '%61dmin', '..', '', 'metrics'), fc.string({ maxLength: 12 }).map(encodeURIComponent)), { maxLength: 5 }).map((s) => `/${s.join('/')}`),
    fc.constantFrom('/v1/admin/', '/v1/admin/x', '/v1/%61dmin/events/replay', '/v1/admin//events/replay', '/V1/ADMIN/EVENTS/REPLAY', '/%FF', '/v1/%00', '/healthz/', '//healthz', `/${'a'.repeat(5000)}`),
  );
  const method = route ? fc.oneof({ arbitrary: fc.constant(route.method), weight: 8 }, { arbitrary: fc.constantFrom(...METHODS), weight: 1 }) : fc.constantFrom(...METHODS);
  return fc
    .record({
      method,
      path: route ? path : unmatched,
      query: queryArbitrary(shape.query ?? {}),
      auth: authArbitrary(token, route?.admin !== true ? 'some' : shape.costly === true ? 'few' : 'most'),
      contentType: fc.constantFrom(...CONTENT_TYPES),
      body: bodyArbitrary(shape.body),
      lie: fc.option(fc.constantFrom('0', '1', '99999999', '-1', 'abc'), { freq: 15 }),
      forwarded: fc.option(fc.constantFrom('1.2.3.4', '::1, 10.0.0.1', 'x'.repeat(300)), { freq: 10 }),
    })
    .map(({ method: m, path: p, query, auth, contentType, body, lie, forwarded }) => {
      const headers: Record<string, string | string[]> = {};
      if (auth.header !== undefined) headers.authorization = auth.header;
      if (contentType !== undefined && body.payload !== undefined) headers['content-type'] = contentType;
      if (lie !== null && body.payload !== undefined) headers['content-length'] = lie;
      if (forwarded !== null) headers['x-forwarded-for'] = forwarded;
      return { method: m, url: p + query, headers, body: body.label, payload: body.payload };
    });
}

function describeCase(c: FuzzCase): string {
  const shown = typeof c.payload === 'string' ? (c.payload.length > 300 ? `${c.payload.slice(0, 300)}… (${c.payload.length} chars)` : c.payload) : c.payload === undefined ? '(none)' : `<${c.payload.length} bytes>`;
  return `${c.method} ${c.url.length > 300 ? `${c.url.slice(0, 300)}…` : c.url} headers=${JSON.stringify(c.headers).slice(0, 400)} body[${c.body}]=${shown}`;
}

const REQUEST_TIMEOUT_MS = 10_000;
const MAX_ERROR_BODY = 64 * 1024;

async function answer(app: FastifyInstance, c: FuzzCase): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const options: InjectOptions = { method: c.method, url: c.url, headers: c.headers, ...(c.payload === undefined ? {} : { payload: c.payload }) };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)), REQUEST_TIMEOUT_MS);
  });
  try {
    const res = await Promise.race([app.inject(options), timeout]);
    return { status: res.statusCode, headers: res.headers, body: res.body };
  } finally {
    clearTimeout(timer);
  }
}

/** What one route's cases got: how many, and how many of each status. */
export interface FuzzRouteReport {
  readonly route: string;
  readonly runs: number;
  /** Cases that reached the route's handler (past auth, parsing, limits and schema validation). */
  readonly handled: number;
  readonly statuses: Readonly<Record<number, number>>;
}

/**
 * Fuzz one route (or, with `route` undefined, paths that match no route) with `runs` cases.
 * Throws fast-check's report (seed, path, the shrunk case) when any case answers 5xx, hangs,
 * answers a 4xx without the typed error body, or changes the database while refused (or on a
 * safe method).
 */
export async function fuzzRoute(target: FuzzTarget, route: RouteEntry | undefined, shape: RouteShape, runs = fuzzRuns()): Promise<FuzzRouteReport> {
  const label = route ? `${route.method} ${route.url}` : 'unmatched paths';
  const statuses: Record<number, number> = {};
  let baseline = await databaseFingerprint(target.owner);
  let handledBefore = handledRequests(target.app);
  let unreachedSinceCheck = 0;
  let handlerCases = 0;
  const property = fc.asyncProperty(caseArbitrary(route, shape, target.adminToken), async (c) => {
    const res = await answer(target.app, c);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    const where = `${describeCase(c)}\n  → ${res.status} ${res.body.slice(0, 500)}`;
    if (res.status >= 500 || res.status < 200) throw new Error(`answered ${res.status}: ${where}`);
    if (res.status >= 400 && c.method !== 'HEAD') {
      if (res.body.length > MAX_ERROR_BODY) throw new Error(`error body of ${res.body.length} bytes: ${where}`);
      let parsed: { error?: { code?: unknown; message?: unknown } };
      try {
        parsed = JSON.parse(res.body) as typeof parsed;
      } catch {
        throw new Error(`error body is not JSON: ${where}`);
      }
      const code = parsed.error?.code;
      if (typeof code !== 'string' || typeof parsed.error?.message !== 'string') throw new Error(`error body is not { error: { code, message } }: ${where}`);
      if (HTTP_STATUS_BY_CODE[code] !== res.status) throw new Error(`error code ${code} is HTTP ${HTTP_STATUS_BY_CODE[code]} in HTTP_STATUS_BY_CODE, answered ${res.status}: ${where}`);
      if (res.status === 401 && res.headers['www-authenticate'] === undefined) throw new Error(`401 without WWW-Authenticate: ${where}`);
    }
    // Every request that reached a handler is checked; of those refused before any handler ran
    // (auth, routing, parsing, limits, schema validation), every tenth, as a check of that claim.
    const reached = handledRequests(target.app) !== handledBefore;
    handledBefore = handledRequests(target.app);
    if (reached) handlerCases++;
    if (!reached && ++unreachedSinceCheck < 10) return;
    unreachedSinceCheck = 0;
    const after = await databaseFingerprint(target.owner);
    const mayWrite = res.status < 400 && !['GET', 'HEAD', 'OPTIONS'].includes(c.method);
    if (after !== baseline && !mayWrite) throw new Error(`the database changed on a ${res.status} to ${c.method}: ${where}`);
    baseline = after;
  });
  await fc.assert(property, { numRuns: runs, seed: fuzzSeed(`${target.service} ${label}`), endOnFailure: true });
  return { route: label, runs, handled: handlerCases, statuses };
}

/** The `route → status histogram` line a fuzz test prints. */
export function formatReport(service: string, reports: readonly FuzzRouteReport[]): string {
  return reports.map((r) => `${service} ${r.route}: ${r.runs} cases (${r.handled} reached a handler), ${Object.entries(r.statuses).map(([s, n]) => `${s}×${n}`).join(' ')}`).join('\n');
}

const DAY_MS = 86_400_000;
// A route's 1,000 cases take 1–3 s on an idle 2-core machine and 30 s or more when the whole
// suite runs beside other work; each request stays bounded at REQUEST_TIMEOUT_MS.
const ROUTE_TIMEOUT_MS = 300_000;

/** The shapes of the routes every service has: health, readiness, metrics, replay and redrive. */
export const COMMON_SHAPES: RouteShapes = {
  'GET /healthz': {},
  'GET /readyz': {},
  'GET /metrics': {},
  'POST /v1/admin/events/replay': {
    body: shapedObject({
      from: fc.oneof(fc.constant(new Date(Date.now() - DAY_MS).toISOString()), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.constant('2026-01-01')),
      to: fc.oneof(fc.constant(new Date(Date.now() + DAY_MS).toISOString()), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())),
    }),
  },
  'POST /v1/admin/events/redrive': { body: shapedObject({ ids: fc.array(fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String), { maxLength: 5 }), limit: fc.integer({ min: 0, max: 100_001 }) }) },
};

export interface HttpSurface extends FuzzTarget {
  /** Shapes of the service's own routes (the common ones are added). */
  readonly shapes: RouteShapes;
  /** Tear the service down after the last case. */
  readonly drop: () => Promise<void>;
}

/**
 * Declare a service's fuzz tests (call at the top level of a test file, once the service is
 * built): a check that every route has a shape and no shape is stale, one test per listed
 * route (HEAD twins included) and one for paths that match no route; the per-route status
 * histograms are printed at the end.
 */
export function describeHttpFuzz(surface: HttpSurface): void {
  const shapes = { ...COMMON_SHAPES, ...surface.shapes };
  const { routes, missing, stale } = routesWithShapes(surface.app, shapes);
  const reports: FuzzRouteReport[] = [];
  describe(`${surface.service} HTTP under hostile input (${fuzzRuns()} cases per route)`, () => {
    afterAll(async () => {
      console.log(formatReport(surface.service, reports));
      await surface.drop();
    });

    it('has a shape for every route the app lists, and none for a route it does not', () => {
      expect({ missing, stale }).toEqual({ missing: [], stale: [] });
    });

    it.each(routes.map((r) => [`${r.method} ${r.url}`, r] as const))('%s: 2xx or a typed 4xx, in bounded time, the database unchanged when refused', async (key, route) => {
      reports.push(await fuzzRoute(surface, route, shapes[key.replace(/^HEAD /, 'GET ')] ?? {}));
    }, ROUTE_TIMEOUT_MS);

    it('paths that match no route: a typed 404 (or 401 under /v1/admin/), never anything else', async () => {
      reports.push(await fuzzRoute(surface, undefined, {}));
    }, ROUTE_TIMEOUT_MS);
  });
}
