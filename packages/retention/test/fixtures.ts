// Shared setup for the retention integration tests: a database with the ledger and the
// fixture tables, an S3-protocol server, and stores with fast failure paths.
import { createServer } from 'node:net';
import { migrationTemplate } from '@craig/db';
import { createObjectStore, type ObjectStore, type ObjectStoreOptions } from '@craig/store';
import { s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { createArchiveEngine, type ArchiveEngine, type ArchiveEngineOptions } from '../src/engine.ts';
import { RETENTION_MIGRATIONS } from '../src/migrations.ts';
import { registerArchiveSpecs } from '../src/prune-gate.ts';

export const FIXTURE_MIGRATIONS = { name: 'retention-fixtures', directory: new URL('./sql/', import.meta.url) };

export function fixtureDatabase(prefix: string): Promise<TestDatabase> {
  return testDatabase({ template: migrationTemplate([RETENTION_MIGRATIONS, FIXTURE_MIGRATIONS]), prefix, max: 2 });
}

export { s3, type S3TestServer };

/**
 * An engine whose specs are registered with the prune gate first, as the owner's migration
 * run registers a service's (`archiveRegistration`): the registration starts at once and every
 * cycle waits for it. Construction errors still throw synchronously.
 */
export function gatedEngine(db: TestDatabase, options: ArchiveEngineOptions): ArchiveEngine {
  const engine = createArchiveEngine(options);
  const registered = registerArchiveSpecs(db.sql, options.specs, options.hotWindowDays);
  registered.catch(() => undefined);
  return {
    ...engine,
    check: async () => {
      await registered;
      return engine.check();
    },
    runCycle: async (cycle) => {
      await registered;
      return engine.runCycle(cycle);
    },
  };
}

export function storeFor(server: S3TestServer, backend: 's3' | 'garage' = 's3', options: ObjectStoreOptions = {}): ObjectStore {
  return createObjectStore(
    { backend, endpoint: server.endpoint, region: server.region, bucket: server.bucket, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey, forcePathStyle: true },
    { backoff: () => 0, ...options },
  );
}

/** A port nothing listens on: a store pointed here is "down". */
export function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
