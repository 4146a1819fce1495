import { createServer } from 'node:net';
import { eventually, s3, type S3TestServer } from '@craig/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from './digest.ts';
import {
  DigestMismatchError,
  ForeignObjectError,
  ObjectNotFoundError,
  StoreAbortedError,
  StoreBudgetExceededError,
  StoreConflictError,
  StoreRequestError,
} from './errors.ts';
import { createObjectStore, type ObjectStore, type ObjectStoreOptions } from './object-store.ts';

// Against s3rver behind the testkit layer: `conditional` answers 412 like AWS/MinIO/R2; the
// plain server overwrites like Garage. Each test builds its own client (the SDK's retry quota
// is per client) with an instant backoff so failure paths run at full speed.
let conditional: S3TestServer;
let plain: S3TestServer;
const stores: ObjectStore[] = [];

beforeAll(async () => {
  [conditional, plain] = await Promise.all([s3({ conditional: true, bucket: 'store-cond' }), s3({ bucket: 'store-plain' })]);
});
afterAll(async () => {
  await Promise.all([conditional.stop(), plain.stop()]);
});
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  await Promise.all([conditional.clearFaults(), plain.clearFaults(), conditional.clearRequests(), plain.clearRequests()]);
});

function storeOn(server: S3TestServer, backend: 's3' | 'garage', options: ObjectStoreOptions = {}): ObjectStore {
  const store = createObjectStore(
    { backend, endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true },
    { backoff: () => 0, ...options },
  );
  stores.push(store);
  return store;
}

/** Write straight to the server, as a foreign writer would (s3rver takes unsigned requests). */
async function rawPut(server: S3TestServer, key: string, body: string | Buffer): Promise<void> {
  const res = await fetch(`${server.endpoint}/${server.bucket}/${key}`, { method: 'PUT', body });
  expect(res.status).toBe(200);
}
async function rawGet(server: S3TestServer, key: string): Promise<string> {
  return (await fetch(`${server.endpoint}/${server.bucket}/${key}`)).text();
}
const requestsFor = async (server: S3TestServer, key: string) => (await server.requests()).filter((r) => r.key === key).map((r) => `${r.method} ${r.status}`);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const ours = Buffer.from('{"id":"1"}\n{"id":"2"}\n');
const theirs = Buffer.from('someone else\n');

describe('putCreate', () => {
  it('creates with If-None-Match: * and a SHA-256 checksum; an existing key is `exists` on an honouring backend', async () => {
    const store = storeOn(conditional, 's3');
    const created = await store.putCreate('pc/one', ours);
    expect(created).toEqual({ key: 'pc/one', sha256: sha256Hex(ours), bytes: ours.length, outcome: 'created', conflicts: 0 });
    expect((await conditional.requests()).find((r) => r.key === 'pc/one')).toMatchObject({ method: 'PUT', ifNoneMatch: '*', status: 200 });
    expect(await store.get('pc/one')).toEqual(ours);
    expect((await store.putCreate('pc/one', theirs)).outcome).toBe('exists');
    expect(await rawGet(conditional, 'pc/one')).toBe(ours.toString());
  });

  it('retries 409 ConditionalRequestConflict itself (the SDK does not)', async () => {
    const store = storeOn(conditional, 's3');
    await conditional.inject({ method: 'PUT', key: 'pc/409', status: 409, times: 2 });
    expect(await store.putCreate('pc/409', ours)).toMatchObject({ outcome: 'created', conflicts: 2 });
    expect(await requestsFor(conditional, 'pc/409')).toEqual(['PUT 409', 'PUT 409', 'PUT 200']);
  });

  it('gives up on 409 after its retries with a typed error', async () => {
    const store = storeOn(conditional, 's3', { bounds: { maxRetries: 2 } });
    await conditional.inject({ method: 'PUT', key: 'pc/409x', status: 409, times: -1 });
    const error = await rejection(store.putCreate('pc/409x', ours));
    expect(error).toBeInstanceOf(StoreConflictError);
    expect(error).toMatchObject({ code: 'store_conflict', key: 'pc/409x', attempts: 3, retryable: true });
    expect(await requestsFor(conditional, 'pc/409x')).toEqual(['PUT 409', 'PUT 409', 'PUT 409']);
  });
});

describe('storeBlobCreate (digest-verified create)', () => {
  for (const backend of ['s3', 'garage'] as const) {
    const server = () => (backend === 's3' ? conditional : plain);

    it(`${backend}: absent key → created`, async () => {
      const store = storeOn(server(), backend);
      const key = `bc/${backend}/new`;
      expect(await store.storeBlobCreate(key, ours)).toEqual({ key, sha256: sha256Hex(ours), bytes: ours.length, outcome: 'created' });
      // Precheck, create, and on garage a read-back.
      expect(await requestsFor(server(), key)).toEqual(backend === 'garage' ? ['GET 404', 'PUT 200', 'GET 200'] : ['GET 404', 'PUT 200']);
      expect(await store.getVerified(key, sha256Hex(ours))).toEqual(ours);
    });

    it(`${backend}: identical occupant → converges with a warning and writes nothing`, async () => {
      const warnings: unknown[] = [];
      const logger = { warn: (o: unknown) => warnings.push(o) } as unknown as NonNullable<ObjectStoreOptions['logger']>;
      const store = storeOn(server(), backend, { logger });
      const key = `bc/${backend}/same`;
      await rawPut(server(), key, ours);
      await server().clearRequests();
      expect(await store.storeBlobCreate(key, ours)).toMatchObject({ outcome: 'converged', sha256: sha256Hex(ours) });
      expect(await requestsFor(server(), key)).toEqual(['GET 200']);
      expect(warnings).toEqual([{ key, sha256: sha256Hex(ours) }]);
    });

    it(`${backend}: foreign occupant → ForeignObjectError before any write`, async () => {
      const store = storeOn(server(), backend);
      const key = `bc/${backend}/foreign`;
      await rawPut(server(), key, theirs);
      await server().clearRequests();
      const error = await rejection(store.storeBlobCreate(key, ours));
      expect(error).toBeInstanceOf(ForeignObjectError);
      expect(error).toMatchObject({ code: 'foreign_object', key, expectedSha256: sha256Hex(ours), foundSha256: sha256Hex(theirs), detectedBy: 'precheck' });
      expect(await requestsFor(server(), key)).toEqual(['GET 200']); // no PUT at all
      expect(await rawGet(server(), key)).toBe(theirs.toString());
    });
  }

  it('s3: 412 (the key was taken after the precheck) → re-verify: identical converges', async () => {
    const store = storeOn(conditional, 's3');
    const key = 'bc/412/same';
    await rawPut(conditional, key, ours);
    // The precheck sees the key empty, as it was an instant before another writer created it.
    await conditional.inject({ method: 'GET', key, status: 404, code: 'NoSuchKey' });
    await conditional.clearRequests();
    expect(await store.storeBlobCreate(key, ours)).toMatchObject({ outcome: 'converged_after_412' });
    expect(await requestsFor(conditional, key)).toEqual(['GET 404', 'PUT 412', 'GET 200']);
  });

  it('s3: 412 → re-verify: a foreign occupant is refused and kept', async () => {
    const store = storeOn(conditional, 's3');
    const key = 'bc/412/foreign';
    await rawPut(conditional, key, theirs);
    await conditional.inject({ method: 'GET', key, status: 404, code: 'NoSuchKey' });
    const error = await rejection(store.storeBlobCreate(key, ours));
    expect(error).toBeInstanceOf(ForeignObjectError);
    expect(error).toMatchObject({ detectedBy: 'precondition', foundSha256: sha256Hex(theirs) });
    expect(await rawGet(conditional, key)).toBe(theirs.toString());
  });

  it('s3: 409 on the create is retried and the create completes', async () => {
    const store = storeOn(conditional, 's3');
    const key = 'bc/409';
    await conditional.inject({ method: 'PUT', key, status: 409, times: 3 });
    expect(await store.storeBlobCreate(key, ours)).toMatchObject({ outcome: 'created' });
    expect(await requestsFor(conditional, key)).toEqual(['GET 404', 'PUT 409', 'PUT 409', 'PUT 409', 'PUT 200']);
  });

  it('garage: an overwrite between the write and the read-back is detected', async () => {
    const store = storeOn(plain, 'garage');
    const key = 'bc/garage/overwritten';
    // Hold the read-back long enough for a foreign writer to replace the object first.
    await plain.inject({ method: 'GET', key, status: 404, code: 'NoSuchKey' }); // precheck: absent
    await plain.inject({ method: 'GET', key, delayMs: 3000 });
    const pending = rejection(store.storeBlobCreate(key, ours));
    await eventually(async () => expect(await requestsFor(plain, key)).toContain('PUT 200'));
    await rawPut(plain, key, theirs);
    const error = await pending;
    expect(error).toBeInstanceOf(ForeignObjectError);
    expect(error).toMatchObject({ detectedBy: 'read_back', expectedSha256: sha256Hex(ours), foundSha256: sha256Hex(theirs) });
  });

  it('garage: the conditional header alone would not have protected the key (the canary)', async () => {
    const key = 'bc/garage/canary';
    const store = storeOn(plain, 'garage');
    await rawPut(plain, key, theirs);
    // putCreate is only the first line: on this backend it silently replaces the occupant.
    expect((await store.putCreate(key, ours)).outcome).toBe('created');
    expect(await rawGet(plain, key)).toBe(ours.toString());
  });
});

describe('bounds in action', () => {
  it('a 500 is retried 10 times: 11 attempts, then a typed, retryable error', async () => {
    const store = storeOn(conditional, 's3');
    const key = 'b/500';
    await conditional.inject({ method: 'PUT', key, status: 500, times: -1 });
    const error = await rejection(store.putCreate(key, ours));
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ code: 'store_request_failed', status: 500, s3Code: 'InternalError', attempts: 11, retryable: true });
    expect((await requestsFor(conditional, key)).filter((r) => r === 'PUT 500')).toHaveLength(11);
  });

  it('a request that outlives requestTimeout is cut and retried (the timeout throws, not warns)', async () => {
    const store = storeOn(conditional, 's3', { bounds: { requestTimeoutMs: 300 } });
    const key = 'b/slow-once';
    await conditional.inject({ method: 'PUT', key, hang: true, times: 1 });
    expect(await store.putCreate(key, ours)).toMatchObject({ outcome: 'created' });
    expect(await requestsFor(conditional, key)).toEqual(['PUT 0', 'PUT 200']);
  });

  it('a hung server makes the operation give up within its budget', async () => {
    const store = storeOn(conditional, 's3', { bounds: { requestTimeoutMs: 400, operationBudgetMs: 1000 } });
    const key = 'b/hung';
    await conditional.inject({ key, hang: true, times: -1 });
    const started = performance.now();
    const error = await rejection(store.storeBlobCreate(key, ours));
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(StoreBudgetExceededError);
    expect(error).toMatchObject({ code: 'store_budget_exceeded', operation: 'storeBlobCreate', key, budgetMs: 1000, retryable: true });
    // Given up at the budget, not after 11 × 400 ms of attempts.
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(3000);
  });

  it('a server that is down fails fast after the retries with a retryable error', async () => {
    const port = await closedPort();
    const store = createObjectStore({ backend: 's3', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', bucket: 'gone', accessKeyId: 'a', secretAccessKey: 'b', forcePathStyle: true }, { backoff: () => 0 });
    stores.push(store);
    const error = await rejection(store.storeBlobCreate('k', ours));
    expect(error).toBeInstanceOf(StoreRequestError);
    expect(error).toMatchObject({ retryable: true, s3Code: 'ECONNREFUSED', attempts: 11 });
  });

  it('the shutdown signal aborts an operation in flight', async () => {
    const shutdown = new AbortController();
    const store = storeOn(conditional, 's3', { signal: shutdown.signal });
    const key = 'b/shutdown';
    await conditional.inject({ key, hang: true, times: -1 });
    const pending = rejection(store.storeBlobCreate(key, ours));
    setTimeout(() => shutdown.abort(new Error('SIGTERM')), 100);
    const error = await pending;
    expect(error).toBeInstanceOf(StoreAbortedError);
    expect(error).toMatchObject({ code: 'store_aborted', key });
  });
});

describe('reads', () => {
  it('getVerified returns the bytes, or refuses a digest mismatch, or says the object is missing', async () => {
    const store = storeOn(conditional, 's3');
    await rawPut(conditional, 'r/ok', ours);
    expect(await store.getVerified('r/ok', sha256Hex(ours))).toEqual(ours);
    const mismatch = await rejection(store.getVerified('r/ok', sha256Hex(theirs)));
    expect(mismatch).toBeInstanceOf(DigestMismatchError);
    expect(mismatch).toMatchObject({ code: 'digest_mismatch', key: 'r/ok', expectedSha256: sha256Hex(theirs), foundSha256: sha256Hex(ours) });
    expect(await rejection(store.getVerified('r/missing', sha256Hex(ours)))).toBeInstanceOf(ObjectNotFoundError);
    expect(() => store.getVerified('r/ok', 'ABC')).toThrow(/64 lower-case hex/);
  });

  it('head and list', async () => {
    const store = storeOn(conditional, 's3');
    for (const k of ['l/a/1', 'l/a/2', 'l/b/1']) await rawPut(conditional, k, ours);
    expect(await store.head('l/a/1')).toEqual({ key: 'l/a/1', size: ours.length });
    expect(await store.head('l/none')).toBeUndefined();
    const listed: string[] = [];
    for await (const o of store.list('l/a/')) listed.push(o.key);
    expect(listed).toEqual(['l/a/1', 'l/a/2']);
  });

  it('the store has no way to delete an object', () => {
    const store = storeOn(conditional, 's3') as unknown as Record<string, unknown>;
    expect(Object.keys(Object.getPrototypeOf(store) as object).concat(Object.getOwnPropertyNames(Object.getPrototypeOf(store))).filter((k) => /delete|remove|purge/i.test(k))).toEqual([]);
  });
});

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
