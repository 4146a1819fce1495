// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- s3rver ships no types; the ambient declaration must reach every program that compiles this file
/// <reference path="./s3rver.d.ts" />
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { startLayer } from './s3-layer.ts';

export interface BackendAddress {
  readonly endpoint: string;
  readonly bucket: string;
  readonly directory: string;
}

/** s3rver plus the layer, in this process. */
export async function startS3Backend(options: { bucket: string; conditional: boolean; directory?: string; port?: number }): Promise<BackendAddress & { stop(): Promise<void> }> {
  const temporary = options.directory === undefined;
  const directory = options.directory ?? (await mkdtemp(join(tmpdir(), 'craig-s3-')));
  const s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: options.bucket, configs: [] }],
  });
  const address = (await s3rver.run()) as { port: number };
  const store = (s3rver as unknown as { store: { existsObject(b: string, k: string): Promise<boolean> } }).store;
  const layer = await startLayer({
    upstreamPort: address.port,
    conditional: options.conditional,
    exists: (bucket, key) => store.existsObject(bucket, key),
    ...(options.port ? { port: options.port } : {}),
  });
  const port = (layer.server.address() as { port: number }).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket: options.bucket,
    directory,
    async stop() {
      await layer.close();
      await s3rver.close();
      if (temporary) await rm(directory, { recursive: true, force: true });
    },
  };
}
