import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3, type S3TestServer } from './s3.ts';

// Raw HTTP against the layer: s3rver accepts unsigned requests to an existing bucket. The
// store's own tests exercise the layer through the AWS SDK.
describe('s3 test server', () => {
  let plain: S3TestServer;
  let conditional: S3TestServer;
  beforeAll(async () => {
    [plain, conditional] = await Promise.all([s3(), s3({ conditional: true, bucket: 'craig-cond' })]);
  });
  afterAll(async () => {
    await Promise.all([plain.stop(), conditional.stop()]);
  });

  const put = (server: S3TestServer, key: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${server.endpoint}/${server.bucket}/${key}`, { method: 'PUT', body, headers });
  const get = async (server: S3TestServer, key: string) => (await fetch(`${server.endpoint}/${server.bucket}/${key}`)).text();

  it('plain (Garage-like) ignores If-None-Match and overwrites', async () => {
    expect((await put(plain, 'a/one', 'first', { 'if-none-match': '*' })).status).toBe(200);
    expect((await put(plain, 'a/one', 'second', { 'if-none-match': '*' })).status).toBe(200);
    expect(await get(plain, 'a/one')).toBe('second');
  });

  it('conditional answers 412 PreconditionFailed on an existing key and keeps the first object', async () => {
    expect((await put(conditional, 'a/one', 'first', { 'if-none-match': '*' })).status).toBe(200);
    const second = await put(conditional, 'a/one', 'second', { 'if-none-match': '*' });
    expect(second.status).toBe(412);
    expect(await second.text()).toContain('<Code>PreconditionFailed</Code>');
    expect(await get(conditional, 'a/one')).toBe('first');
    // Without the header a put still overwrites, as on AWS.
    expect((await put(conditional, 'a/one', 'third')).status).toBe(200);
  });

  it('concurrent creates of one key: exactly one wins', async () => {
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => put(conditional, 'race/key', `body-${i}`, { 'if-none-match': '*' })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412]);
  });

  it('injects a status for the next matching requests, then behaves again', async () => {
    await conditional.inject({ method: 'PUT', key: 'faulty', status: 409, times: 2 });
    expect((await put(conditional, 'faulty', 'x', { 'if-none-match': '*' })).status).toBe(409);
    expect((await put(conditional, 'other', 'x')).status).toBe(200); // key does not match
    expect((await put(conditional, 'faulty', 'x', { 'if-none-match': '*' })).status).toBe(409);
    expect((await put(conditional, 'faulty', 'x', { 'if-none-match': '*' })).status).toBe(200);
    await conditional.inject({ key: 're:^boom/', status: 500, times: -1 });
    expect((await put(conditional, 'boom/1', 'x')).status).toBe(500);
    expect((await put(conditional, 'boom/2', 'x')).status).toBe(500);
    await conditional.clearFaults();
    expect((await put(conditional, 'boom/3', 'x')).status).toBe(200);
    const log = await conditional.requests();
    expect(log.filter((r) => r.key === 'faulty').map((r) => r.status)).toEqual([409, 409, 200]);
  });

  it('occupies a key the way a racing foreign writer would, then forwards the request', async () => {
    await conditional.inject({ method: 'HEAD', key: 're:^occupied/', occupy: 'foreign bytes' });
    const head = await fetch(`${conditional.endpoint}/${conditional.bucket}/occupied/k1`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await get(conditional, 'occupied/k1')).toBe('foreign bytes');
    // A create of the key now finds the occupant.
    expect((await put(conditional, 'occupied/k1', 'ours', { 'if-none-match': '*' })).status).toBe(412);
    // One shot: the next HEAD of another key finds nothing.
    expect((await fetch(`${conditional.endpoint}/${conditional.bucket}/occupied/k2`, { method: 'HEAD' })).status).toBe(404);
  });

  it('listens on the port it is given, so a killed server comes back at the same endpoint', async () => {
    const first = await s3({ process: 'child', conditional: true, bucket: 'craig-port' });
    const port = Number(new URL(first.endpoint).port);
    const directory = first.directory;
    try {
      expect((await put(first, 'kept/one', 'body')).status).toBe(200);
      process.kill(first.pid!, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 300));
      await expect(fetch(`${first.endpoint}/${first.bucket}/kept/one`)).rejects.toThrow();
      const again = await s3({ process: 'child', conditional: true, bucket: 'craig-port', port, directory });
      try {
        expect(again.endpoint).toBe(first.endpoint);
        expect(await get(again, 'kept/one')).toBe('body');
      } finally {
        await again.stop();
      }
    } finally {
      await first.stop();
    }
  });

  it('delays and hangs', async () => {
    await plain.inject({ method: 'GET', key: 'slow', delayMs: 300 });
    await put(plain, 'slow', 'x');
    const started = Date.now();
    expect(await get(plain, 'slow')).toBe('x');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    await plain.inject({ method: 'GET', key: 'slow', hang: true });
    await expect(fetch(`${plain.endpoint}/${plain.bucket}/slow`, { signal: AbortSignal.timeout(300) })).rejects.toThrow();
  });

  it('runs in a child process too', async () => {
    const child = await s3({ process: 'child', conditional: true, bucket: 'craig-child' });
    try {
      expect((await put(child, 'k', 'v', { 'if-none-match': '*' })).status).toBe(200);
      expect((await put(child, 'k', 'w', { 'if-none-match': '*' })).status).toBe(412);
      await child.inject({ method: 'GET', status: 500 });
      expect((await fetch(`${child.endpoint}/${child.bucket}/k`)).status).toBe(500);
      expect(await get(child, 'k')).toBe('v');
    } finally {
      await child.stop();
    }
  });
});
