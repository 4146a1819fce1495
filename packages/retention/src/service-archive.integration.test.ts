// openArchiveDeps against the in-process S3 server: the store it opens works, its stop is
// registered once under `object store`, and that stop aborts what is still in flight.
import { s3, type S3TestServer } from '@craig/testkit';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArchiveDeps } from './service-archive.ts';

let server: S3TestServer;
beforeAll(async () => {
  server = await s3({ conditional: true, bucket: 'ret-open-deps' });
});
afterAll(async () => {
  await server.stop();
});

describe('openArchiveDeps', () => {
  it('opens the store from ARCHIVE_* settings and registers a stop that aborts it', async () => {
    const stops: Array<{ name: string; stop: () => Promise<void> }> = [];
    const deps = openArchiveDeps(
      {
        objectStore: { backend: 's3', endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true },
        hotWindowDays: 120,
        prefix: 'archive',
        everyMinutes: 15,
        firstCycleDelaySeconds: 45,
      },
      { logger: pino({ level: 'silent' }), onStop: (name, stop) => void stops.push({ name, stop }) },
    );
    expect({ hotWindowDays: deps.hotWindowDays, prefix: deps.prefix, everyMinutes: deps.everyMinutes, firstCycleDelaySeconds: deps.firstCycleDelaySeconds }).toEqual({ hotWindowDays: 120, prefix: 'archive', everyMinutes: 15, firstCycleDelaySeconds: 45 });
    expect(stops.map((s) => s.name)).toEqual(['object store']);

    const bytes = new TextEncoder().encode('{"id":1}\n');
    expect(await deps.store.putCreate('archive/t/1.ndjson.gz', bytes)).toMatchObject({ outcome: 'created' });
    expect(await deps.store.head('archive/t/1.ndjson.gz')).toMatchObject({ size: bytes.length });

    await stops[0]!.stop();
    // After the stop, an operation is refused by the aborted shutdown signal, not sent.
    await server.clearRequests();
    await expect(deps.store.head('archive/t/1.ndjson.gz')).rejects.toThrow();
    expect(await server.requests()).toEqual([]);
  });
});
