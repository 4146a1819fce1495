import { randomUUID } from 'node:crypto';
import { defineRuntimeGrants, migrate } from '@craig/db';
import type { ObjectStore } from '@craig/store';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_MIGRATIONS, rejection, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import { createArchiveEngine } from './engine.ts';
import { ArchiveSpecError } from './errors.ts';
import { readLedger } from './fetch.ts';
import { RETENTION_MIGRATIONS } from './migrations.ts';
import { archiveRegistration, registerArchiveSpecs } from './prune-gate.ts';
import { defineArchiveSpec, fixpoints } from './spec.ts';

// A lab service as it runs in production: the owner migrates (and registers the specs), the
// engine runs as a runtime login that may read and insert the archived table, never delete.
const ROLE = 'craig_retention_lab_app';
const audit = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly(), batchSize: 50 });
const jobs = defineArchiveSpec({ table: 'jobs', keyColumn: 'id', timestampColumn: 'created_at', fixpoint: fixpoints.terminalStatus('status', ['done', 'failed']) });
const labSet = { ...FIXTURE_MIGRATIONS, runtimeGrants: defineRuntimeGrants({ tables: { audit_events: ['select', 'insert'], jobs: ['select', 'insert'] } }), afterMigrate: archiveRegistration([audit, jobs], 30) };

let db: TestDatabase;
let app: postgres.Sql;
let appUrl: string;
let server: S3TestServer;
let store: ObjectStore;

beforeAll(async () => {
  [db, server] = await Promise.all([testDatabase({ prefix: 'ret_gate', max: 2 }), s3({ conditional: true, bucket: 'ret-gate' })]);
  await migrate(db.url, [RETENTION_MIGRATIONS, labSet], { service: 'test', runtime: { role: ROLE } });
  appUrl = Object.assign(new URL(db.url), { username: ROLE }).toString();
  app = postgres(appUrl, { max: 2, onnotice: () => {} });
  store = storeFor(server);
});
afterAll(async () => {
  store.close();
  await app.end({ timeout: 1 });
  await Promise.all([db.drop(), server.stop()]);
});
beforeEach(async () => {
  await db.sql`truncate audit_events, jobs`;
  // The ledger refuses TRUNCATE and DELETE (append-only), the owner's included: switched off here only.
  await db.sql`alter table archive_ledger disable trigger user`;
  await db.sql`delete from archive_ledger`;
  await db.sql`alter table archive_ledger enable trigger user`;
});

const engine = (hotWindowDays = 30) => createArchiveEngine({ service: 'lab', databaseUrl: appUrl, store, specs: [audit, jobs], hotWindowDays, prefix: 'archive' });
const seed = (n: number, ageDays: number) =>
  app`insert into audit_events (occurred_at, actor) select now() - make_interval(days => ${ageDays}) + make_interval(secs => g), 'actor-' || g from generate_series(1, ${n}) g`;
const hot = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`)[0]!.n;

async function sqlstate(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

/** One direct call of the gate, as a compromised runtime process could make it. */
function gate(sql: postgres.Sql | postgres.TransactionSql, table: string, ctids: string[], keys: string[], xmins: string[], hotWindowDays: number, archiveId: string = randomUUID()) {
  return sql`
    select deleted, exact from archive_prune_batch(${archiveId}::uuid, ${table}, ${`lab/${archiveId}`}, ${'0'.repeat(64)}, 1, ${ctids.length}::int,
      ${keys[0] ?? ''}, ${keys.at(-1) ?? ''}, now() - interval '1 day', now(), ${ctids}::tid[], ${keys}::text[], ${xmins}::text[], ${hotWindowDays}::int)`;
}

describe('the prune gate', () => {
  it('lets the engine archive and prune as a runtime role that holds no DELETE and cannot write the ledger', async () => {
    await seed(120, 40);
    await seed(5, 1);
    const report = await engine().runCycle();
    expect(report.tables[0]).toMatchObject({ table: 'audit_events', rows: 120, batches: 3, outcome: 'drained' });
    expect(await hot()).toBe(5);
    expect((await readLedger(db.sql, { table: 'audit_events' })).reduce((n, e) => n + e.rowCount, 0)).toBe(120);
    expect(await sqlstate(app`delete from audit_events`)).toBe('42501');
    expect(await sqlstate(app`insert into archive_ledger (archive_id, table_name, object_key, sha256, bytes, row_count, min_key, max_key, min_ts, max_ts) values (gen_random_uuid(), 'x', 'x', ${'0'.repeat(64)}, 1, 1, '1', '1', now(), now())`)).toBe('42501');
    expect(await sqlstate(app`update archive_ledger set row_count = 1`)).toBe('42501');
    expect(await sqlstate(app`delete from archive_tables`)).toBe('42501');
    expect(await sqlstate(app`update archive_tables set hot_window_days = 1`)).toBe('42501');
  });

  it('deletes by the registered policy only: a shorter window asked for, or an unregistered table, deletes nothing', async () => {
    await seed(3, 10);
    const rows = await app<{ ctid: string; id: string; xmin: string }[]>`select ctid::text, id::text, xmin::text from audit_events order by id`;
    // Asked for a 1-day window; registered 30: the 10-day-old rows stay, and no ledger row says otherwise.
    const refused = await gate(app, 'audit_events', rows.map((r) => r.ctid), rows.map((r) => r.id), rows.map((r) => r.xmin), 1).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'CRR01' });
    expect(JSON.parse((refused as { detail: string }).detail)).toEqual({ code: 'archive_count_mismatch', archived: 3, deleted: 0, exact: 0 });
    expect(await hot()).toBe(3);
    expect(await readLedger(db.sql, { table: 'audit_events' })).toEqual([]);
    expect(await sqlstate(gate(app, 'craig_migrations', rows.map((r) => r.ctid), rows.map((r) => r.id), rows.map((r) => r.xmin), 30))).toBe('42501');
    expect(await sqlstate(gate(app, 'audit_events', rows.map((r) => r.ctid), rows.map((r) => r.id).slice(1), rows.map((r) => r.xmin), 30))).toBe('22023');
  });

  it('records every delete in the ledger, and one archive id prunes once', async () => {
    await seed(4, 40);
    const rows = await app<{ ctid: string; id: string; xmin: string }[]>`select ctid::text, id::text, xmin::text from audit_events order by id`;
    const id = randomUUID();
    const first = rows.slice(0, 2);
    const [done] = await gate(app, 'audit_events', first.map((r) => r.ctid), first.map((r) => r.id), first.map((r) => r.xmin), 30, id);
    expect(done).toEqual({ deleted: 2, exact: 2 });
    expect((await readLedger(db.sql, { table: 'audit_events' })).map((e) => e.archiveId)).toEqual([id]);
    const rest = rows.slice(2);
    expect(await sqlstate(gate(app, 'audit_events', rest.map((r) => r.ctid), rest.map((r) => r.id), rest.map((r) => r.xmin), 30, id))).toBe('23505');
    expect(await hot()).toBe(2);
  });

  it('deletes only rows that are exactly an archived (ctid, key, xmin) triple: any other triple refuses the whole batch', async () => {
    await seed(3, 40);
    const rows = await app<{ ctid: string; id: string; xmin: string }[]>`select ctid::text, id::text, xmin::text from audit_events order by id`;
    const ctids = rows.map((r) => r.ctid);
    const keys = rows.map((r) => r.id);
    const xmins = rows.map((r) => r.xmin);
    const refusal = async (p: Promise<unknown>) => {
      const error = (await p.then(() => undefined, (e: unknown) => e)) as { code?: string; detail?: string } | undefined;
      expect(error?.code).toBe('CRR01');
      return JSON.parse(error!.detail!) as unknown;
    };
    // The first two rows' keys swapped: each slot and xmin is real, neither key is its row's.
    const swapped = [keys[1]!, keys[0]!, keys[2]!];
    expect(await refusal(gate(app, 'audit_events', ctids, swapped, xmins, 30))).toEqual({ code: 'archive_count_mismatch', archived: 3, deleted: 1, exact: 1 });
    // One xmin that is not the row's version.
    expect(await refusal(gate(app, 'audit_events', ctids, keys, [xmins[0]!, xmins[1]!, '2'], 30))).toEqual({ code: 'archive_count_mismatch', archived: 3, deleted: 2, exact: 2 });
    // The first row's slot named for the second row.
    expect(await refusal(gate(app, 'audit_events', [ctids[0]!, ctids[0]!, ctids[2]!], keys, xmins, 30))).toEqual({ code: 'archive_count_mismatch', archived: 3, deleted: 2, exact: 2 });
    // One triple twice, to make two rows of one: the row is deleted once and counted once.
    expect(await refusal(gate(app, 'audit_events', [ctids[0]!, ctids[0]!], [keys[0]!, keys[0]!], [xmins[0]!, xmins[0]!], 30))).toEqual({ code: 'archive_count_mismatch', archived: 2, deleted: 1, exact: 1 });
    // A key that is not the key column's type at all.
    expect(await sqlstate(gate(app, 'audit_events', ctids, [keys[0]!, 'x', keys[2]!], xmins, 30))).toBe('22P02');
    // Every refusal undid its statement, ledger row included.
    expect(await hot()).toBe(3);
    expect(await readLedger(db.sql, { table: 'audit_events' })).toEqual([]);
    const [done] = await gate(app, 'audit_events', ctids, keys, xmins, 30);
    expect(done).toEqual({ deleted: 3, exact: 3 });
    expect(await hot()).toBe(0);
  });

  it('the engine refuses a spec the gate would prune differently', async () => {
    const other = createArchiveEngine({ service: 'lab', databaseUrl: appUrl, store, specs: [defineArchiveSpec({ ...audit, timestampColumn: 'occurred_at', fixpoint: fixpoints.terminalStatus('actor', ['x']) })], hotWindowDays: 30, prefix: 'archive' });
    const differs = await rejection(other.check());
    expect(differs).toBeInstanceOf(ArchiveSpecError);
    expect((differs as Error).message).toMatch(/registration=.* differs from the engine's spec/);
    // Registered for 30 days: an engine with a 10-day window would see every batch roll back.
    expect((await rejection(engine(10).check())) as Error).toMatchObject({ field: 'registration.hotWindowDays', value: 30 });
    await db.sql.begin((tx) => registerArchiveSpecs(tx as never, [jobs], 30));
    try {
      expect(((await rejection(engine().check())) as Error).message).toMatch(/audit_events.*is missing from archive_tables/);
    } finally {
      await db.sql.begin((tx) => registerArchiveSpecs(tx as never, [audit, jobs], 30));
    }
    await expect(engine().check()).resolves.toBeUndefined();
  });
});
