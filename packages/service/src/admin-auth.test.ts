import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminTokenCheck, tokenFingerprint, UnauthorizedError } from './admin-auth.ts';
import { createHttpApp, listRoutes } from './app.ts';
import { createLogger } from './logger.ts';

const TOKEN = 'an-admin-token-of-at-least-32-characters';

function capture(): { lines: () => Record<string, unknown>[]; stream: PassThrough } {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('adminTokenCheck', () => {
  const check = adminTokenCheck(TOKEN);

  it('accepts exactly "Bearer <token>" (any case of the scheme) and returns its fingerprint', () => {
    expect(check.verify(`Bearer ${TOKEN}`)).toBe(tokenFingerprint(TOKEN));
    expect(check.verify(`bearer ${TOKEN}`)).toBe(tokenFingerprint(TOKEN));
    expect(tokenFingerprint(TOKEN)).toMatch(/^sha256:[0-9a-f]{12}$/);
  });

  it.each([
    ['no header', undefined, 'missing'],
    ['an empty header', '', 'missing'],
    ['another scheme', `Basic ${TOKEN}`, 'malformed'],
    ['a repeated header (an array)', [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`], 'malformed'],
    ['the token without the scheme', TOKEN, 'malformed'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`, 'wrong_token'],
    ['the token and more', `Bearer ${TOKEN}x`, 'wrong_token'],
    ['a token of the same length', `Bearer ${'x'.repeat(TOKEN.length)}`, 'wrong_token'],
    ['a 100 kB token', `Bearer ${'x'.repeat(100_000)}`, 'wrong_token'],
  ] as const)('refuses %s', (_what, header, reason) => {
    let thrown: unknown;
    try {
      check.verify(header);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UnauthorizedError);
    expect(thrown).toMatchObject({ code: 'unauthorized', reason });
    expect(JSON.stringify(thrown)).not.toContain(TOKEN);
  });
});

describe('admin routes of createHttpApp', () => {
  const registry = new Registry();
  const log = capture();
  const app = createHttpApp({ service: 'cases', logger: createLogger('cases', 'info', { destination: log.stream, secrets: [TOKEN] }), registry, adminToken: TOKEN });
  app.post('/v1/admin/things/replay', async (request) => ({ replayed: 3, asked: request.body }));
  app.post('/v1/admin/small', { bodyLimit: 64 }, async () => ({ ok: true }));
  app.post('/v1/rule-sets/:name', { config: { admin: true } }, async () => ({ ok: true }));
  app.post('/v1/open', async (request) => ({ echoed: request.body }));
  app.get('/v1/items/:id', async (request) => request.params);
  beforeAll(() => app.ready());
  afterAll(() => app.close());
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('answers 401 with the typed error body and a WWW-Authenticate challenge', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/admin/things/replay' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="cases"');
    expect(res.json()).toEqual({ error: { code: 'unauthorized', message: 'this route needs Authorization: Bearer <admin token>', name: 'UnauthorizedError', retryable: false, reason: 'missing' } });
    const wrong = await app.inject({ method: 'POST', url: '/v1/admin/things/replay', headers: { authorization: `Bearer ${'y'.repeat(40)}` } });
    expect(wrong.json().error).toMatchObject({ code: 'unauthorized', reason: 'wrong_token' });
  });

  it('decides by the matched route, so a percent-encoded admin path is guarded too (/v1/%61dmin/… was let through)', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/%61dmin/things/replay', payload: {} });
    expect(res.statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/v1/%61dmin/things/replay', payload: {}, headers: auth })).statusCode).toBe(200);
  });

  it('guards a route marked config.admin outside /v1/admin/, and an unknown admin path until the token is shown', async () => {
    expect((await app.inject({ method: 'POST', url: '/v1/rule-sets/x' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/v1/rule-sets/x', headers: auth })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: '/v1/admin/nope' })).statusCode).toBe(401);
    const unknown = await app.inject({ method: 'POST', url: '/v1/admin/nope', headers: auth });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
  });

  it('refuses before reading the body: an unauthenticated 10 MB body is a 401, not a 413', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/admin/things/replay', payload: Buffer.alloc(10 * 1024 * 1024, 0x20), headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(401);
  });

  it('applies each route its own body limit (64 bytes here, 16 KiB by default) with the typed 413', async () => {
    const over = await app.inject({ method: 'POST', url: '/v1/admin/small', payload: { pad: 'x'.repeat(64) }, headers: auth });
    expect(over.statusCode).toBe(413);
    expect(over.json().error).toMatchObject({ code: 'payload_too_large', retryable: false });
    expect((await app.inject({ method: 'POST', url: '/v1/open', payload: { pad: 'x'.repeat(15_000) } })).statusCode).toBe(200);
    expect((await app.inject({ method: 'POST', url: '/v1/open', payload: { pad: 'x'.repeat(17_000) } })).statusCode).toBe(413);
    expect(listRoutes(app).find((r) => r.url === '/v1/admin/small')).toEqual({ method: 'POST', url: '/v1/admin/small', admin: true, bodyLimit: 64 });
    expect(listRoutes(app).find((r) => r.url === '/v1/open')).toMatchObject({ admin: false, bodyLimit: 16 * 1024 });
  });

  it('lists every route, the HEAD twin of each GET included', () => {
    const routes = listRoutes(app).map((r) => `${r.method} ${r.url}`);
    expect(routes).toEqual(expect.arrayContaining(['GET /healthz', 'HEAD /healthz', 'GET /readyz', 'GET /metrics', 'POST /v1/admin/things/replay', 'POST /v1/rule-sets/:name', 'GET /v1/items/:id', 'HEAD /v1/items/:id']));
  });

  it.each([
    ['a bad percent-encoding', 'GET', '/v1/items/%FF', 400, 'invalid_request'],
    ['a path parameter past 100 characters', 'GET', `/v1/items/${'a'.repeat(101)}`, 414, 'uri_too_long'],
    ['an unsupported content type', 'POST', '/v1/open', 415, 'unsupported_media_type'],
    ['malformed JSON', 'POST', '/v1/open', 400, 'invalid_request'],
  ] as const)('answers %s with the typed body', async (what, method, url, status, code) => {
    const headers = what === 'an unsupported content type' ? { 'content-type': 'text/csv' } : { 'content-type': 'application/json' };
    const res = await app.inject({ method, url, headers, ...(method === 'POST' ? { payload: '{"a":' } : {}) });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ error: { code, retryable: false, message: expect.any(String) } });
  });

  it('audits every admin request: a warn line with the token fingerprint (never the token), remote address, what and outcome, and a counter', async () => {
    await app.inject({ method: 'POST', url: '/v1/admin/things/replay', payload: { from: '2026-01-01', to: '2026-01-02', ids: Array.from({ length: 12 }, (_, i) => String(i)) }, headers: auth, remoteAddress: '10.1.2.3' });
    await app.inject({ method: 'POST', url: '/v1/admin/things/replay', headers: { authorization: `Bearer ${'z'.repeat(40)}` }, remoteAddress: '10.9.9.9' });
    const audit = log.lines().filter((l) => l.audit === 'admin');
    const ok = audit.find((l) => (l.caller as { remoteAddress: string }).remoteAddress === '10.1.2.3');
    expect(ok).toMatchObject({
      level: 40,
      action: 'POST /v1/admin/things/replay',
      caller: { token: tokenFingerprint(TOKEN), remoteAddress: '10.1.2.3' },
      request: { body: { from: '2026-01-01', to: '2026-01-02', ids: { count: 12, first: ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'] } } },
      outcome: 'ok',
      status: 200,
      result: { replayed: 3 },
    });
    expect(Date.parse(ok!.at as string)).not.toBeNaN();
    const refused = audit.find((l) => (l.caller as { remoteAddress: string }).remoteAddress === '10.9.9.9');
    expect(refused).toMatchObject({ outcome: 'unauthorized', status: 401, error: 'unauthorized', caller: { token: tokenFingerprint('z'.repeat(40)) } });
    expect(JSON.stringify(log.lines())).not.toContain(TOKEN);
    const counter = (await registry.getSingleMetric('admin_requests_total')!.get()).values;
    expect(counter).toEqual(expect.arrayContaining([expect.objectContaining({ labels: { route: '/v1/admin/things/replay', outcome: 'ok' } })]));
    expect(counter.find((v) => v.labels.route === '/v1/admin/things/replay' && v.labels.outcome === 'unauthorized')?.value).toBeGreaterThanOrEqual(1);
  });

  it('never audits a route that is not an admin route', async () => {
    const before = log.lines().length;
    await app.inject({ method: 'POST', url: '/v1/open', payload: {} });
    expect(log.lines().slice(before).filter((l) => l.audit === 'admin')).toEqual([]);
  });
});
