import { Registry, Counter } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from './app.ts';
import { Lifecycle } from './lifecycle.ts';
import { silentLogger } from './logger.ts';

class ReplayOutOfWindow extends Error {
  readonly code = 'replay_out_of_window';
  readonly retryable = false;
  constructor(readonly boundary: string) {
    super(`from is before the replay horizon ${boundary}`);
  }
}
class Flaky extends Error {
  readonly code = 'something_transient';
  readonly retryable = true;
}

describe('createHttpApp', () => {
  const registry = new Registry();
  const counter = new Counter({ name: 'test_things_total', help: 'things', registers: [registry] });
  let ready = true;
  const app = createHttpApp({
    service: 'cases',
    logger: silentLogger(),
    registry,
    adminToken: 'a-long-enough-admin-token-0123456789',
    readiness: [{ name: 'database', check: async () => void (ready || (await Promise.reject(new Error('connection refused')))) }],
  });
  app.post('/v1/admin/replay', async () => {
    throw new ReplayOutOfWindow('2026-11-02T00:00:00Z');
  });
  app.get('/v1/flaky', async () => {
    throw new Flaky('later');
  });
  app.get('/v1/bug', async () => {
    throw new Error('secret internals');
  });
  // A driver's error has a string code no table entry knows (what postgres.js throws).
  app.get('/v1/driver-bug', async () => {
    throw Object.assign(new Error('invalid input syntax for type timestamp'), { code: '22007', routine: 'DateTimeParseError', where: 'parameter $3' });
  });
  app.post('/v1/echo', { schema: { body: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } } } } }, async (req) => req.body);
  beforeAll(() => app.ready());
  afterAll(() => app.close());

  it('answers health, readiness and metrics', async () => {
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok', service: 'cases' });
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    ready = false;
    const notReady = await app.inject('/readyz');
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json().checks).toEqual([{ name: 'database', ok: false, error: 'connection refused' }]);
    ready = true;
    counter.inc(3);
    expect((await app.inject('/metrics')).body).toContain('test_things_total 3');
  });

  it('guards /v1/admin/* with the bearer token', async () => {
    expect((await app.inject({ method: 'POST', url: '/v1/admin/replay' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'POST', url: '/v1/admin/replay', headers: { authorization: 'Bearer wrong' } })).statusCode).toBe(401);
    const ok = await app.inject({ method: 'POST', url: '/v1/admin/replay', headers: { authorization: 'Bearer a-long-enough-admin-token-0123456789' } });
    expect(ok.statusCode).toBe(400);
    expect(ok.json()).toEqual({ error: { code: 'replay_out_of_window', message: 'from is before the replay horizon 2026-11-02T00:00:00Z', retryable: false, boundary: '2026-11-02T00:00:00Z' } });
  });

  it('maps codes to statuses: unknown retryable → 503, plain errors → 500 without internals, validation → 400', async () => {
    expect((await app.inject('/v1/flaky')).statusCode).toBe(503);
    const bug = await app.inject('/v1/bug');
    expect(bug.statusCode).toBe(500);
    expect(bug.body).not.toContain('secret internals');
    // Found by the HTTP fuzzer: a PostgresError's 500 echoed the server's file, line, routine and parameters.
    const driver = await app.inject('/v1/driver-bug');
    expect(driver.statusCode).toBe(500);
    expect(driver.json()).toEqual({ error: { code: 'internal', message: 'internal error' } });
    const invalid = await app.inject({ method: 'POST', url: '/v1/echo', payload: { n: 'x' } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().error.code).toBe('invalid_request');
    const malformed = await app.inject({ method: 'POST', url: '/v1/echo', payload: '{', headers: { 'content-type': 'application/json' } });
    expect(malformed.statusCode).toBe(400);
    expect((await app.inject('/nope')).statusCode).toBe(404);
  });

  // Found by the HTTP fuzzer: safety's POST /v1/safety-reports with summary "\u0003…\u0000" answered 500
  // (PostgreSQL text cannot store U+0000). Refused for every route at the JSON parser, naming where.
  it('refuses U+0000 in any JSON string or key with invalid_request naming its path; prototype keys too', async () => {
    const nul = await app.inject({ method: 'POST', url: '/v1/echo', payload: '{"n":1,"list":["ok","b\\u0000"]}', headers: { 'content-type': 'application/json' } });
    expect(nul.statusCode).toBe(400);
    expect(nul.json().error).toMatchObject({ code: 'invalid_request', field: 'body.list[1]' });
    const key = await app.inject({ method: 'POST', url: '/v1/echo', payload: '{"n":1,"a\\u0000":2}', headers: { 'content-type': 'application/json' } });
    expect(key.json().error).toMatchObject({ code: 'invalid_request', field: 'body."a\\u0000"' });
    // An escaped backslash before "u0000" is no NUL: accepted.
    expect((await app.inject({ method: 'POST', url: '/v1/echo', payload: '{"n":1,"s":"\\\\u0000"}', headers: { 'content-type': 'application/json' } })).statusCode).toBe(200);
    const proto = await app.inject({ method: 'POST', url: '/v1/echo', payload: '{"n":1,"__proto__":{"x":1}}', headers: { 'content-type': 'application/json' } });
    expect(proto.statusCode).toBe(400);
    expect(proto.json().error.code).toBe('invalid_request');
  });
});

describe('Lifecycle', () => {
  it('stops in reverse order, once, and keeps going past a failing step', async () => {
    const order: string[] = [];
    const life = new Lifecycle(silentLogger());
    life.add('pool', async () => void order.push('pool'));
    life.add('worker', async () => {
      order.push('worker');
      throw new Error('worker stop failed');
    });
    life.add('http', async () => void order.push('http'));
    await Promise.all([life.stop(), life.stop()]);
    expect(order).toEqual(['http', 'worker', 'pool']);
  });
});
