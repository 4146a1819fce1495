// Shared setup for the cleanup integration tests: a database named to match the allow-list,
// the `cleanup` set installed through its guard with the runtime role's grants, an owner
// (superuser) pool for setup and assertions, and a pool logged in as the non-owner runtime
// role for every writer path.
import { createClient, migrate, type Sql } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { cleanupMigrations, runToCompletion, RUNTIME_ROLE, type StepOptions, type StepResult } from '../src/index.ts';

export const ALLOWED = ['inventory_t*'];

export interface Harness {
  readonly db: TestDatabase;
  /** Superuser: setup, assertions, and the writer that bypasses triggers on purpose. */
  readonly admin: Sql;
  /** The runtime role: every protocol call and every sync write in the tests. */
  readonly app: Sql;
  drop(): Promise<void>;
}

export async function cleanupHarness(options: { appMax?: number } = {}): Promise<Harness> {
  const db = await testDatabase({ prefix: 'inventory_t', max: 2 });
  await migrate(db.url, [cleanupMigrations({ allowedDatabases: ALLOWED })], { service: 'test', runtime: { role: RUNTIME_ROLE } });
  const app = createClient(runtimeUrl(db.url), { service: 'test-runtime', max: options.appMax ?? 3, idleTimeoutSeconds: 5 });
  return {
    db,
    admin: db.sql,
    app,
    async drop() {
      await app.end({ timeout: 1 });
      await db.drop();
    },
  };
}

/** The same database, logged in as the runtime role (trust auth on the test server). */
export function runtimeUrl(url: string): string {
  return Object.assign(new URL(url), { username: RUNTIME_ROLE, password: '' }).toString();
}

let serial = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${++serial}`;

/** A server and `libraries` libraries on it, written as the runtime role. */
export async function seedServer(app: Sql, libraries = 1): Promise<{ serverId: number; libraryIds: number[] }> {
  const [server] = await app<{ id: number }[]>`insert into servers (external_id, name) values (${unique('srv')}, 'server') returning id`;
  const libraryIds: number[] = [];
  for (let i = 0; i < libraries; i++) libraryIds.push(await seedLibrary(app, server!.id));
  return { serverId: server!.id, libraryIds };
}

export async function seedLibrary(app: Sql, serverId: number): Promise<number> {
  const [row] = await app<{ id: string }[]>`insert into libraries (server_id, external_id, name) values (${serverId}, ${unique('lib')}, 'library') returning id`;
  return Number(row!.id);
}

/** `n` items `<prefix>-1 … <prefix>-n` in a library, in one insert (runtime role, through the triggers). */
export async function seedItems(app: Sql, serverId: number, libraryId: number, n: number, prefix = unique('item')): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`);
  await app`
    insert into items (server_id, library_id, external_id, title)
    select ${serverId}, ${libraryId}, x, 'title ' || x from unnest(${ids}::text[]) as x`;
  return ids;
}

export async function itemsIn(sql: Sql, libraryId: number): Promise<string[]> {
  return (await sql<{ external_id: string }[]>`select external_id from items where library_id = ${libraryId} order by id`).map((r) => r.external_id);
}

export async function admissionOf(sql: Sql, libraryId: number): Promise<string | undefined> {
  const [row] = await sql<{ admission: string }[]>`select admission from libraries where id = ${libraryId}`;
  return row?.admission;
}

/** Append ids page by page (≤ 128 per call). */
export async function appendAll(app: Sql, append: (sql: Sql, jobId: number, ids: string[]) => Promise<unknown>, jobId: number, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 128) await append(app, jobId, ids.slice(i, i + 128));
}

/** The rejection of `p`, asserting it rejects. */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

/** Step a job to completion from its next step, collecting every result. */
export async function stepAll(sql: Sql, jobId: number, options: StepOptions = {}): Promise<StepResult[]> {
  const results: StepResult[] = [];
  await runToCompletion(sql, jobId, { ...options, onStep: (r) => results.push(r) });
  return results;
}
