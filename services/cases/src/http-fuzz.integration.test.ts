// Every route of the cases API under hostile input (see @craig/service-testkit `fuzzRoute`).
import { fc, formatReport, fuzzRoute, routesWithShapes, shapedObject, type FuzzRouteReport, type RouteShapes } from '@craig/service-testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, casesHarness } from '../test/harness.ts';

const h = await casesHarness();
const opened = await Promise.all(['a', 'b', 'c'].map(async (subject) => (await call(h.app, 'POST', '/v1/cases', { subject })).body.id as string));
await call(h.app, 'POST', `/v1/cases/${opened[2]}/close`);
const caseId = fc.oneof(fc.constantFrom(...opened), fc.uuid());

const SHAPES: RouteShapes = {
  'GET /healthz': {},
  'GET /readyz': {},
  'GET /metrics': {},
  'POST /v1/admin/events/replay': { body: shapedObject({ from: fc.constantFrom('2026-01-01T00:00:00Z', new Date(Date.now() - 86_400_000).toISOString()), to: fc.constantFrom(new Date().toISOString(), '2100-01-01') }) },
  'POST /v1/admin/events/redrive': { body: shapedObject({ ids: fc.array(fc.bigInt({ min: 1n, max: 10n ** 18n }).map(String), { maxLength: 5 }), limit: fc.integer({ min: 1, max: 100_000 }) }) },
  'POST /v1/cases': { body: shapedObject({ subject: fc.string({ maxLength: 210 }) }) },
  'POST /v1/cases/:id/close': { params: { id: caseId } },
  'GET /v1/cases/:id': { params: { id: caseId } },
  'GET /v1/cases': { query: { status: fc.constantFrom('open', 'closed'), order: fc.constantFrom('oldest', 'newest'), limit: fc.integer({ min: 0, max: 101 }).map(String) } },
};

const { routes, missing, stale } = routesWithShapes(h.app, SHAPES);
const reports: FuzzRouteReport[] = [];
const target = { app: h.app, owner: h.db.sql, adminToken: ADMIN_TOKEN, service: 'cases' };

describe('cases HTTP under hostile input', () => {
  afterAll(async () => {
    console.log(formatReport('cases', reports));
    await h.drop();
  });

  it('has a shape for every route the app lists, and none for a route it does not', () => {
    expect({ missing, stale }).toEqual({ missing: [], stale: [] });
  });

  it.each(routes.map((r) => [`${r.method} ${r.url}`, r] as const))('%s: 2xx or a typed 4xx, in bounded time, the database unchanged when refused', async (key, route) => {
    reports.push(await fuzzRoute(target, route, SHAPES[key.replace(/^HEAD /, 'GET ')] ?? {}));
  });

  it('paths that match no route: a typed 404 (or 401 under /v1/admin/), never anything else', async () => {
    reports.push(await fuzzRoute(target, undefined, {}));
  });
});
