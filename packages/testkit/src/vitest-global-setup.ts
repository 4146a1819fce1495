// vitest globalSetup: choose the PostgreSQL server once for the whole run (starting an
// embedded cluster if nothing else answers), hand its URL to every worker, and drop the
// databases killed runs left behind.
import { sweepStaleDatabases } from './database.ts';
import { postgres, stopEmbeddedPostgres, TESTKIT_URL_VARIABLE } from './postgres.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const url = await postgres();
  process.env[TESTKIT_URL_VARIABLE] = url;
  await sweepStaleDatabases();
  return async () => {
    await stopEmbeddedPostgres();
  };
}
