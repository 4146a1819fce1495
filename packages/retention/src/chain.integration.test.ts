// FK deletion order across a three-table chain (runs ← members ← handoffs, the exchange
// shape), and the checks the engine makes of specs against the schema before it deletes.
import { retentionOverrun } from '@craig/mq';
import type { ObjectStore } from '@craig/store';
import type { TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fixtureDatabase, gatedEngine, rejection, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import type { ArchiveEngineOptions } from './engine.ts';
import { ArchiveSpecError } from './errors.ts';
import { readLedger } from './fetch.ts';
import { archiveRetentionSpecs } from './overrun.ts';
import { defineArchiveSpec, fixpoints, type ArchiveSpec } from './spec.ts';

let db: TestDatabase;
let server: S3TestServer;
let store: ObjectStore;

beforeAll(async () => {
  [db, server] = await Promise.all([fixtureDatabase('ret_chain'), s3({ conditional: true, bucket: 'ret-chain' })]);
  store = storeFor(server);
});
afterAll(async () => {
  store.close();
  await Promise.all([db.drop(), server.stop()]);
});
beforeEach(async () => {
  await db.sql`truncate handoffs, members, runs, audit_events cascade`;
  await db.sql`alter table archive_ledger disable trigger user`;
  await db.sql`delete from archive_ledger`;
  await db.sql`alter table archive_ledger enable trigger user`;
});

const handoffs = defineArchiveSpec({ table: 'handoffs', keyColumn: 'id', timestampColumn: 'created_at', fixpoint: fixpoints.insertOnly(), batchSize: 2 });
const members = defineArchiveSpec({
  table: 'members',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.terminalStatus('status', ['done']),
  guards: [{ table: 'handoffs', column: 'member_id' }],
  batchSize: 2,
});
const runs = defineArchiveSpec({
  table: 'runs',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.terminalStatus('status', ['done']),
  guards: [{ table: 'members', column: 'run_id' }],
  batchSize: 2,
});

function engine(specs: readonly ArchiveSpec[], overrides: Partial<ArchiveEngineOptions> = {}) {
  return gatedEngine(db, { service: 'exchange-lab', databaseUrl: db.url, store, specs, hotWindowDays: 365, prefix: 'archive', ...overrides });
}

describe('a three-table FK chain', () => {
  it('archives children before parents and never deletes a parent with dependents', async () => {
    await db.sql`
      insert into runs (id, created_at, status) values
        (1, now() - interval '2 years', 'done'),  -- all its members go
        (2, now() - interval '2 years', 'done'),  -- keeps a member whose handoff is hot
        (3, now() - interval '2 years', 'done'),  -- keeps a hot member
        (4, now() - interval '2 years', 'done'),  -- no members at all
        (5, now() - interval '2 years', 'open')`;
    await db.sql`
      insert into members (id, run_id, created_at, status) values
        (11, 1, now() - interval '2 years', 'done'),
        (12, 1, now() - interval '2 years', 'done'),
        (13, 1, now() - interval '2 years', 'done'),
        (21, 2, now() - interval '2 years', 'done'),
        (31, 3, now() - interval '10 days', 'done')`;
    await db.sql`
      insert into handoffs (id, member_id, created_at) values
        (gen_random_uuid(), 11, now() - interval '2 years'),
        (gen_random_uuid(), 12, now() - interval '2 years'),
        (gen_random_uuid(), 13, now() - interval '2 years'),
        (gen_random_uuid(), 21, now() - interval '10 days')`;

    // The archive invariants see exactly what the engine would take now: a hot child keeps its
    // parent out (guard), an open run is not at its fixpoint, a member inside the window is hot.
    const invariants = archiveRetentionSpecs([handoffs, members, runs], 365);
    expect(invariants.map((s) => s.name)).toEqual(['handoffs_archive_overrun', 'members_archive_overrun', 'runs_archive_overrun']);
    const overruns = async () => Promise.all(invariants.map(async (spec) => retentionOverrun(db.sql, spec)));
    expect((await overruns()).map((o) => [o.name, o.ok, o.overdueRows])).toEqual([
      ['handoffs_archive_overrun', false, 3],
      ['members_archive_overrun', true, 0], // every old member still has a handoff: guarded
      ['runs_archive_overrun', false, 1], // only run 4 has no member
    ]);

    const report = await engine([handoffs, members, runs]).runCycle();
    expect((await overruns()).every((o) => o.ok && o.overdueRows === 0)).toBe(true);
    expect(report.tables.map((t) => [t.table, t.rows, t.outcome])).toEqual([
      ['handoffs', 3, 'drained'],
      ['members', 3, 'drained'],
      ['runs', 2, 'drained'],
    ]);
    expect((await db.sql`select id from runs order by id`).map((r) => Number(r.id))).toEqual([2, 3, 5]);
    expect((await db.sql`select id from members order by id`).map((r) => Number(r.id))).toEqual([21, 31]);
    expect((await db.sql`select member_id from handoffs`).map((r) => Number(r.member_id))).toEqual([21]);

    // Every batch of a child committed before any batch of its parent.
    const order = (await db.sql<{ table_name: string }[]>`select table_name from archive_ledger order by created_at, archive_id`).map((r) => r.table_name);
    expect(order).toEqual(['handoffs', 'handoffs', 'members', 'members', 'runs']);
  });

  it('refuses specs given parents first', () => {
    let error: unknown;
    try {
      engine([runs, members, handoffs]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ArchiveSpecError);
    expect((error as Error).message).toMatch(/runs.*guards="members" is archived after runs.*dependents first/);
  });

  it('refuses, before deleting anything, a table whose foreign-key dependent has no guard', async () => {
    await db.sql`insert into runs (id, created_at, status) values (1, now() - interval '2 years', 'done')`;
    const unguarded = defineArchiveSpec({ ...members, guards: [] });
    const error = await rejection(engine([handoffs, unguarded, runs]).runCycle());
    expect(error).toBeInstanceOf(ArchiveSpecError);
    expect((error as Error).message).toContain('handoffs(member_id)');
    expect((error as Error).message).toContain('has no guard');
    expect(await readLedger(db.sql)).toEqual([]);
    await expect(engine([handoffs, unguarded, runs]).check()).rejects.toThrow(/has no guard/);
  });
});

describe('a table that guards itself', () => {
  it('a row freed by a later batch of the same cycle is counted overdue (not skipped as drained), and the next cycle archives it', async () => {
    await db.sql`create table if not exists threads (id bigint primary key, parent_id bigint references threads (id), created_at timestamptz not null)`;
    await db.sql`truncate threads`;
    // 1 ← 2 ← 3: a parent has a dependent until its child goes, and a child's key is after its parent's.
    await db.sql`insert into threads (id, parent_id, created_at) values (1, null, now() - interval '2 years'), (2, 1, now() - interval '2 years'), (3, 2, now() - interval '2 years')`;
    const threads = defineArchiveSpec({ table: 'threads', keyColumn: 'id', timestampColumn: 'created_at', fixpoint: fixpoints.insertOnly(), guards: [{ table: 'threads', column: 'parent_id' }], batchSize: 10 });
    const registry = new Registry();
    const cycle = async () => {
      const report = await engine([threads], { registry }).runCycle();
      const [gauge] = (await registry.getSingleMetric('archive_overdue_rows')!.get()).values;
      const left = (await db.sql<{ id: string }[]>`select id from threads order by id`).map((r) => Number(r.id));
      return [report.tables[0]!.rows, report.tables[0]!.outcome, gauge!.value, left];
    };
    // Each cycle takes the one row without a dependent; the parent it frees is behind the keyset.
    expect(await cycle()).toEqual([1, 'drained', 1, [1, 2]]);
    expect(await cycle()).toEqual([1, 'drained', 1, [1]]);
    expect(await cycle()).toEqual([1, 'drained', 0, []]);
  });
});

describe('specs are checked against the schema', () => {
  const base = { keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() } as const;
  const problems: Array<[string, () => Promise<void>, RegExp]> = [
    ['a missing table', async () => {}, /"nope".*does not exist/],
    ['a missing column', async () => {}, /timestampColumn="created".*is not a column of audit_events/],
    ['a key without a unique index', async () => db.sql`create table if not exists dup_keys (id bigint, occurred_at timestamptz)`.then(() => undefined), /must have a unique index/],
    ['an unsupported key type', async () => db.sql`create table if not exists num_keys (id numeric primary key, occurred_at timestamptz)`.then(() => undefined), /has type numeric; supported key types/],
    ['a timestamp that is not timestamptz', async () => db.sql`create table if not exists naive_ts (id bigint primary key, occurred_at timestamp)`.then(() => undefined), /it must be timestamptz/],
    ['a column archive-fetch reserves', async () => db.sql`create table if not exists reserved_cols (id bigint primary key, occurred_at timestamptz, _table text)`.then(() => undefined), /column named _table/],
  ];
  const tableFor: Record<string, Partial<ArchiveSpec>> = {
    'a missing table': { table: 'nope' },
    'a missing column': { table: 'audit_events', timestampColumn: 'created' },
    'a key without a unique index': { table: 'dup_keys' },
    'an unsupported key type': { table: 'num_keys' },
    'a timestamp that is not timestamptz': { table: 'naive_ts' },
    'a column archive-fetch reserves': { table: 'reserved_cols' },
  };
  for (const [name, setup, message] of problems) {
    it(`refuses ${name}`, async () => {
      await setup();
      const spec = defineArchiveSpec({ ...base, table: 'audit_events', ...tableFor[name] });
      const error = await rejection(engine([spec]).check());
      expect(error).toBeInstanceOf(ArchiveSpecError);
      expect((error as Error).message).toMatch(message);
    });
  }
});

describe('precondition 3: eligibility is evaluated by the database', () => {
  it("the delete's cutoff is the database's own clock: a now() shadowed through the search_path moves the select, never the gate", async () => {
    // Rows 10 and 400 days old by any clock; then now(), as the engine's own statements resolve
    // it, is moved 100 years ahead (what any session may do with its search_path). The select
    // then finds both rows eligible; the prune gate, whose search_path is pinned, judges by
    // pg_catalog.now(): it deletes only the old row, the counts differ, and the batch rolls back.
    await db.sql`
      insert into audit_events (occurred_at, actor) values
        (pg_catalog.now() - interval '400 days', 'old'),
        (pg_catalog.now() - interval '10 days', 'young')`;
    await db.sql`create schema clockshift`;
    await db.sql`create function clockshift.now() returns timestamptz language sql stable as $$ select pg_catalog.now() + interval '100 years' $$`;
    await db.sql.unsafe(`alter database ${db.name} set search_path = clockshift, pg_catalog, public`);
    try {
      const spec = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });
      const report = await engine([spec]).runCycle();
      expect(report.tables[0]).toMatchObject({ rows: 0, outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    } finally {
      await db.sql.unsafe(`alter database ${db.name} reset search_path`);
      await db.sql`drop schema clockshift cascade`;
    }
    expect((await db.sql`select actor from audit_events order by id`).map((r) => r.actor)).toEqual(['old', 'young']);
    // With the clock as it is, the old row goes and the young one stays.
    await engine([defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() })]).runCycle();
    expect((await db.sql`select actor from audit_events`).map((r) => r.actor)).toEqual(['young']);
  });
});
