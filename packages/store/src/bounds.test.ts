import { describe, expect, it } from 'vitest';
import { BACKOFF_CAP_MS, jitteredBackoff, resolveBounds, STORE_BOUNDS } from './bounds.ts';
import { checkBackend } from './config.ts';
import { UnsupportedBackendError } from './errors.ts';
import { createSdkClient } from './internal/sdk-client.ts';
import { createObjectStore } from './object-store.ts';

const config = { backend: 's3', endpoint: 'http://127.0.0.1:9', region: 'us-east-1', bucket: 'craig-archive', accessKeyId: 'k', secretAccessKey: 's', forcePathStyle: true };

describe('pinned object-store bounds', () => {
  it('are 30 s per request, 5 s connect, 10 retries and 180 s per operation', () => {
    expect(STORE_BOUNDS).toEqual({ requestTimeoutMs: 30_000, connectTimeoutMs: 5_000, maxRetries: 10, operationBudgetMs: 180_000 });
    expect(Object.isFrozen(STORE_BOUNDS)).toBe(true);
  });

  it('reach the SDK client: whole-request timeout that throws, connect timeout, 11 attempts, no default checksums', async () => {
    const client = createSdkClient({ endpoint: undefined, region: 'us-east-1', forcePathStyle: false, accessKeyId: undefined, secretAccessKey: undefined, bounds: STORE_BOUNDS, backoff: () => 0 });
    try {
      // The handler resolves its options on first use; these are what it will apply.
      const handler = client.config.requestHandler as unknown as { configProvider: Promise<Record<string, unknown>> };
      const configs = await handler.configProvider;
      expect(configs).toMatchObject({ requestTimeout: 30_000, throwOnRequestTimeout: true, connectionTimeout: 5_000, socketTimeout: 30_000 });
      const strategy = (await client.config.retryStrategy()) as unknown as { constructor: { name: string }; maxAttempts(): Promise<number> };
      expect(strategy.constructor.name).toBe('ConfiguredRetryStrategy');
      expect(await strategy.maxAttempts()).toBe(11);
      expect(await client.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
      expect(await client.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
    } finally {
      client.destroy();
    }
  });

  it('a store built without overrides carries exactly the pinned bounds', () => {
    const store = createObjectStore(config);
    try {
      expect(store.bounds).toEqual(STORE_BOUNDS);
      expect(store.backend).toBe('s3');
    } finally {
      store.close();
    }
  });

  it('overrides are validated', () => {
    expect(resolveBounds({ operationBudgetMs: 1000 }).operationBudgetMs).toBe(1000);
    expect(() => resolveBounds({ requestTimeoutMs: 0 })).toThrow(/requestTimeoutMs must be an integer ≥ 1: 0/);
    expect(() => resolveBounds({ maxRetries: -1 })).toThrow(/maxRetries/);
  });

  it('default backoff is jittered, exponential and capped', () => {
    expect(jitteredBackoff(1, () => 0)).toBe(0);
    expect(jitteredBackoff(1, () => 0.999)).toBe(99);
    expect(jitteredBackoff(4, () => 0.999)).toBe(799);
    expect(jitteredBackoff(30, () => 0.999)).toBe(Math.floor(0.999 * BACKOFF_CAP_MS));
    const samples = Array.from({ length: 50 }, () => jitteredBackoff(3));
    expect(new Set(samples).size).toBeGreaterThan(1);
    expect(Math.max(...samples)).toBeLessThan(400);
  });
});

describe('backends', () => {
  it('accepts s3 and garage', () => {
    expect(checkBackend('s3')).toBe('s3');
    expect(checkBackend('garage')).toBe('garage');
  });

  it('refuses a local filesystem at boot with a clear, typed error', () => {
    let error: unknown;
    try {
      createObjectStore({ ...config, backend: 'local' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UnsupportedBackendError);
    expect(error).toMatchObject({ code: 'unsupported_backend', backend: 'local', retryable: false });
    expect((error as Error).message).toContain('local filesystem has no timeouts');
    expect(() => createObjectStore({ ...config, backend: 'minio' })).toThrow(/"minio" is not supported/);
  });
});
