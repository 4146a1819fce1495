// The cleanup benchmark's data: one server with a target library of `rows` items (each with a
// classification-history row, so deletes cascade) and an unaffected library the sync writer
// keeps upserting into; a sealed prune job whose manifest holds every other item.
import { appendSeen, createJob, RUNTIME_ROLE, seal } from '@craig/cleanup';
import { createClient, migrate, type Sql } from '@craig/db';
import { inventoryMigrationSets } from '@craig/svc-inventory';
import { databaseUrl, postgres } from '@craig/testkit';
import postgresJs from 'postgres';

export const BENCH_DB_PREFIX = 'inventory_bench';
export const WRITER_ITEMS = 2_000;
let copies = 0;

export interface Fixture {
  readonly url: string;
  readonly name: string;
  readonly serverId: number;
  readonly targetLibrary: number;
  readonly writerLibrary: number;
  readonly jobId: number;
  readonly seen: number;
  readonly unseen: number;
  readonly collectMs: number;
}

async function admin<T>(url: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = postgresJs(url, { max: 1, onnotice: () => {}, connection: { application_name: 'craig-bench-admin' } });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export async function buildFixture(rows: number, log: (line: string) => void): Promise<Fixture> {
  const root = await postgres();
  const name = `${BENCH_DB_PREFIX}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await createMarked(root, name);
  const url = databaseUrl(root, name);
  // As inventory's boot prepares it: the runtime role granted exactly its sets' privileges
  // (and SET on wal_compression, which the runner's session uses: ADR-069).
  await migrate(url, inventoryMigrationSets({ allowedDatabases: [`${BENCH_DB_PREFIX}_*`] }), { service: 'bench', runtime: { role: RUNTIME_ROLE } });

  const app = createClient(url, { service: 'bench-setup', max: 2, role: RUNTIME_ROLE });
  try {
    const [server] = await app<{ id: number }[]>`insert into servers (external_id, name) values ('bench-server', 'Bench') returning id`;
    const serverId = server!.id;
    const [target] = await app<{ id: string }[]>`insert into libraries (server_id, external_id, name) values (${serverId}, 'target', 'Target') returning id`;
    const [writer] = await app<{ id: string }[]>`insert into libraries (server_id, external_id, name) values (${serverId}, 'writer', 'Writer') returning id`;
    const targetLibrary = Number(target!.id);
    const writerLibrary = Number(writer!.id);

    log(`seeding ${rows} items (+ ${rows} classification rows) and ${WRITER_ITEMS} writer items into ${name}`);
    await admin(url, async (sql) => {
      // Known-good bulk data: skip the per-row admission triggers for the load only.
      await sql.begin(async (tx) => {
        await tx`set local session_replication_role = replica`;
        await tx`insert into items (server_id, library_id, external_id, title)
                 select ${serverId}, ${targetLibrary}, 't-' || g, 'Title ' || g from generate_series(1, ${rows}) g`;
        await tx`insert into items (server_id, library_id, external_id, title)
                 select ${serverId}, ${writerLibrary}, 'w-' || g, 'Title ' || g from generate_series(1, ${WRITER_ITEMS}) g`;
        await tx`insert into item_classifications (item_id, classification) select id, 'movie' from items`;
      });
    });

    // Every other item was seen by the traversal: the unseen half is scattered through the library.
    const job = await createJob(app, { serverId, libraryId: targetLibrary, kind: 'prune-library' });
    const collectStarted = performance.now();
    let seen = 0;
    for (let from = 2; from <= rows; from += 256) {
      const ids: string[] = [];
      for (let g = from; g <= Math.min(rows, from + 254); g += 2) ids.push(`t-${g}`);
      seen += (await appendSeen(app, job.id, ids)).added;
    }
    await seal(app, job.id, { expectedUniqueCount: seen });
    const collectMs = performance.now() - collectStarted;
    await admin(url, (sql) => sql`vacuum analyze`);
    return { url, name, serverId, targetLibrary, writerLibrary, jobId: job.id, seen, unseen: rows - seen, collectMs };
  } finally {
    await app.end({ timeout: 1 });
  }
}

/** A byte-for-byte copy of the fixture's database for the baseline (no connections may be open to it). */
export async function copyDatabase(fixture: Fixture): Promise<{ url: string; name: string }> {
  const root = await postgres();
  const name = `${fixture.name}_c${++copies}`;
  await createMarked(root, name, fixture.name);
  return { url: databaseUrl(root, name), name };
}

/**
 * Create a bench database carrying the testkit's marker comment, so a run that is killed
 * leaves nothing behind for long: the test run's global setup drops marked databases after 3 h.
 */
async function createMarked(root: string, name: string, template?: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(name) || (template !== undefined && !/^[a-z0-9_]+$/.test(template))) throw new TypeError(`bad database name ${name}`);
  await admin(root, async (sql) => {
    await sql.unsafe(template ? `create database ${name} template ${template}` : `create database ${name}`);
    await sql.unsafe(`comment on database ${name} is 'craig-testkit:${Date.now()}'`);
  });
}

export async function dropDatabase(name: string): Promise<void> {
  await admin(await postgres(), (sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
}

/** Read every table and index the run touches, so neither side starts cold. */
export async function warm(url: string): Promise<void> {
  await admin(url, async (sql) => {
    await sql`select count(*) from items`;
    await sql`select count(*) from item_classifications`;
    await sql`select count(*) from cleanup_manifest`;
    await sql`set enable_seqscan = off`;
    await sql`select count(*) from items where library_id > 0`;
    await sql`select count(*) from item_classifications where item_id > 0`;
    await sql`select count(*) from cleanup_manifest where job_id > 0`;
  });
}
