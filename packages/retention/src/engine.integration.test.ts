import { isUuidv7, LOCK_KEYS, withDedicatedSession } from '@craig/db';
import type { ObjectStore } from '@craig/store';
import type { TestDatabase } from '@craig/testkit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fixtureDatabase, gatedEngine, rejection, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import type { ArchiveEngineOptions } from './engine.ts';
import { PurgeRefusedError } from './errors.ts';
import { readArchiveObject, readLedger } from './fetch.ts';
import { defineArchiveSpec, fixpoints } from './spec.ts';

let db: TestDatabase;
let server: S3TestServer;
let store: ObjectStore;

beforeAll(async () => {
  [db, server] = await Promise.all([fixtureDatabase('ret_engine'), s3({ conditional: true, bucket: 'ret-engine' })]);
  store = storeFor(server);
});
afterAll(async () => {
  store.close();
  await Promise.all([db.drop(), server.stop()]);
});
beforeEach(async () => {
  await db.sql`truncate audit_events, announcements`;
  // The ledger refuses TRUNCATE (append-only); each test starts from a fresh copy instead.
  await db.sql`alter table archive_ledger disable trigger user`;
  await db.sql`delete from archive_ledger`;
  await db.sql`alter table archive_ledger enable trigger user`;
});

const audit = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly(), batchSize: 100 });

function engine(overrides: Partial<ArchiveEngineOptions> = {}) {
  return gatedEngine(db, { service: 'lab', databaseUrl: db.url, store, specs: [audit], hotWindowDays: 30, prefix: 'archive', ...overrides });
}

/** n audit rows `ageDays` old (one second apart, so they order), with awkward values. */
async function seed(n: number, ageDays: number): Promise<void> {
  await db.sql`
    insert into audit_events (occurred_at, actor, amount, big, payload, note)
    select now() - make_interval(days => ${ageDays}) + make_interval(secs => g), 'actor-' || g, g * 1.5, g, jsonb_build_object('g', g), 'row ' || g
    from generate_series(1, ${n}) g`;
}
const hotCount = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`)[0]!.n;

describe('object size', () => {
  it('objects are bounded in bytes as well as rows: after the first batch, each is sized from the bytes per row seen', async () => {
    await seed(1000, 60);
    const wide = defineArchiveSpec({ ...audit, batchSize: 400 });
    const [{ bytes } = { bytes: 0 }] = await db.sql<{ bytes: number }[]>`select avg(length(row_to_json(t)::text))::int as bytes from audit_events t`;
    const report = await engine({ specs: [wide], maxObjectBytes: bytes * 150 }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 1000, outcome: 'drained' });
    const counts = (await readLedger(db.sql)).map((e) => e.rowCount);
    // First batch 400 rows (the spec's bound), then about 150 (the byte bound), never over 400.
    expect(counts[0]).toBe(400);
    expect(counts.slice(1, -1).every((n) => n >= 120 && n <= 180)).toBe(true);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1000);
    await expect(Promise.resolve().then(() => engine({ maxObjectBytes: 10 }))).rejects.toThrow(RangeError);
  });
});

describe('archive round trip', () => {
  it('archived then fetched rows equal the originals value for value', async () => {
    await db.sql`
      insert into audit_events (occurred_at, actor, amount, big, payload, note, tags, raw, ratio) values
        ('2020-01-02 03:04:05.123456+00', 'ünïcødé 🎉', 12345678901234567890.123456789000, 9007199254740993,
         '{"n": 9007199254740993, "f": 1.10, "s": "x\\ny", "nested": {"deep": [1, 2, 18446744073709551617]}}',
         ${'line one\nline two\r\n\ttab "quoted" \\backslash\\ \u0001 control, 日本語'}, array['a,b', 'c"d', null], '\\x00ff10', 0.1),
        ('2020-01-02 03:04:05.000001+00', 'nulls', null, null, '{}', null, null, null, null),
        ('2020-02-29 23:59:59.999999+00', 'negative', -0.000000000000000001, -9223372036854775808, '[1e400]', '', '{}', '\\x', 'NaN')`;
    // The originals, rendered by PostgreSQL, in a fixed time zone.
    const original = await db.sql.begin(async (tx) => {
      await tx`set local timezone = 'Asia/Kolkata'`;
      return tx<{ row: string }[]>`select t::text as row from audit_events t order by id`;
    });

    const report = await engine().runCycle();
    expect(report).toMatchObject({ status: 'completed', tables: [{ table: 'audit_events', rows: 3, batches: 1, outcome: 'drained' }] });
    expect(await hotCount()).toBe(0);

    const [entry, ...more] = await readLedger(db.sql);
    expect(more).toEqual([]);
    const rows = await readArchiveObject(store, entry!);
    // Every value is PostgreSQL's own text for it: microseconds, digits beyond 2^53 and
    // numeric scale survive any JSON reader.
    expect(rows[0]).toMatchObject({
      occurred_at: '2020-01-02 03:04:05.123456+00',
      actor: 'ünïcødé 🎉',
      amount: '12345678901234567890.123456789000',
      big: '9007199254740993',
      note: 'line one\nline two\r\n\ttab "quoted" \\backslash\\ \u0001 control, 日本語',
      tags: '{"a,b","c\\"d",NULL}',
      raw: '\\x00ff10',
      ratio: '0.1',
    });
    expect(rows[0]!.payload).toContain('9007199254740993');
    expect(rows[0]!.payload).toContain('18446744073709551617');
    expect(rows[1]).toMatchObject({ amount: null, big: null, note: null, payload: '{}' });
    expect(Object.keys(rows[0]!)).toEqual(['id', 'occurred_at', 'actor', 'amount', 'big', 'payload', 'note', 'tags', 'raw', 'ratio']);

    // Restored through each column's input function, the rows are the originals again.
    const restored = await db.sql.begin(async (tx) => {
      await tx`create temp table audit_restored (like audit_events) on commit drop`;
      await tx`
        insert into audit_restored
        select (r->>'id')::bigint, (r->>'occurred_at')::timestamptz, r->>'actor', (r->>'amount')::numeric, (r->>'big')::bigint,
               (r->>'payload')::jsonb, r->>'note', (r->>'tags')::text[], (r->>'raw')::bytea, (r->>'ratio')::float8
        from jsonb_array_elements(${JSON.stringify(rows)}::text::jsonb) r`;
      await tx`set local timezone = 'Asia/Kolkata'`;
      return tx<{ row: string }[]>`select t::text as row from audit_restored t order by id`;
    });
    expect(restored).toEqual(original);
  });

  it('writes gzip NDJSON under <prefix>/<service>/<table>/<yyyy>/<mm>/<uuidv7>.ndjson.gz and records it in the ledger', async () => {
    await db.sql`insert into audit_events (occurred_at, actor) values ('2021-07-31 23:59:59+00', 'a'), ('2021-08-01 00:00:01+00', 'b')`;
    await engine().runCycle();
    const [entry] = await readLedger(db.sql);
    expect(entry).toMatchObject({ table: 'audit_events', rowCount: 2, minTs: '2021-07-31T23:59:59.000000Z', maxTs: '2021-08-01T00:00:01.000000Z' });
    expect(isUuidv7(entry!.archiveId)).toBe(true);
    expect(entry!.key).toBe(`archive/lab/audit_events/2021/07/${entry!.archiveId}.ndjson.gz`);
    const object = await store.get(entry!.key);
    expect(object.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(entry!.bytes).toBe(object.length);
    const ids = (await db.sql<{ id: string }[]>`select archive_id::text as id from archive_ledger`).map((r) => r.id);
    expect(ids).toEqual([entry!.archiveId]);
    const [minmax] = await db.sql`select min_key, max_key from archive_ledger`;
    expect(minmax).toEqual({ min_key: expect.any(String), max_key: expect.any(String) });
    expect(Number(minmax!.max_key) - Number(minmax!.min_key)).toBe(1);
  });

  it('archives in batches ordered by key, each its own object and ledger row', async () => {
    await seed(250, 40);
    const report = await engine().runCycle();
    expect(report.tables).toEqual([{ table: 'audit_events', rows: 250, bytes: expect.any(Number), batches: 3, outcome: 'drained' }]);
    const ledger = await readLedger(db.sql);
    expect(ledger.map((e) => e.rowCount).sort()).toEqual([100, 100, 50]);
    const byKey = [...ledger].sort((a, b) => Number(a.minKey) - Number(b.minKey));
    expect(Number(byKey[1]!.minKey)).toBe(Number(byKey[0]!.maxKey) + 1);
    expect(Number(byKey[2]!.minKey)).toBe(Number(byKey[1]!.maxKey) + 1);
    expect(report.tables[0]!.bytes).toBe(ledger.reduce((a, e) => a + e.bytes, 0));
  });
});

describe('the batch stream', () => {
  it('reads many batches in a row on its one connection, each larger than the stream buffer, without stalling', async () => {
    // Every batch (40 rows of ~1 KB) overflows the COPY stream's 16 KB buffer before it is read,
    // which pauses the socket; before the postgres.js patch the reader's next statement then
    // waited forever (porsager/postgres#499) and this cycle hung at its second batch.
    await db.sql`
      insert into audit_events (occurred_at, actor, note)
      select now() - interval '40 days' + make_interval(secs => g), 'actor-' || g, repeat(md5(g::text), 32)
      from generate_series(1, 2000) g`;
    const report = await engine({ specs: [defineArchiveSpec({ ...audit, batchSize: 40 })] }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 2000, batches: 50, outcome: 'drained' });
    expect(await hotCount()).toBe(0);
    expect((await readLedger(db.sql)).reduce((n, e) => n + e.rowCount, 0)).toBe(2000);
  }, 30_000);

  it('records the oldest and newest timestamp of a batch whatever its key order, BC and -infinity included', async () => {
    await db.sql`
      insert into audit_events (id, occurred_at, actor) values
        (1, '2020-05-01 00:00:00+00', 'a'), (2, '0044-03-15 12:00:00+00 BC', 'b'), (3, '2019-01-01 00:00:00.5+00', 'c'),
        (4, '2020-05-01 00:00:00.000001+00', 'd'), (5, '-infinity', 'e'), (6, '1999-12-31 23:59:59+00', 'f')`;
    const report = await engine().runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 6, outcome: 'drained' });
    const [entry, more] = await readLedger(db.sql);
    expect(more).toBeUndefined();
    // Microseconds included: the ledger's span is the rows' own, not a JavaScript Date's.
    expect(entry).toMatchObject({ rowCount: 6, minKey: '1', maxKey: '6', maxTs: '2020-05-01T00:00:00.000001Z' });
    const span = async (minKey: string) => (await db.sql<{ min: string; max: string }[]>`select min_ts::text as min, max_ts::text as max from archive_ledger where min_key = ${minKey}`)[0];
    expect(await span('1')).toEqual({ min: '-infinity', max: '2020-05-01 00:00:00.000001+00' });
    await db.sql`insert into audit_events (id, occurred_at, actor) values (7, '2020-05-01 00:00:00+00', 'g'), (8, '0044-03-15 12:00:00+00 BC', 'h'), (9, '1999-12-31 23:59:59+00', 'i')`;
    expect((await engine().runCycle()).tables[0]).toMatchObject({ rows: 3, outcome: 'drained' });
    expect(await span('7')).toEqual({ min: '0044-03-15 12:00:00+00 BC', max: '2020-05-01 00:00:00+00' });
  });
});

describe('text keys', () => {
  it('archives and deletes exactly the rows whose keys hold quotes, backslashes, commas and braces', async () => {
    await db.sql`create table if not exists text_keyed (code text primary key, at timestamptz not null)`;
    const codes = ['plain', 'with "quotes"', 'back\\slash', 'comma,separated', '{braced}', ' spaced ', 'ünï', 'NULL'];
    for (const code of codes) await db.sql`insert into text_keyed (code, at) values (${code}, now() - interval '40 days')`;
    await db.sql`insert into text_keyed (code, at) values ('young', now())`;
    const spec = defineArchiveSpec({ table: 'text_keyed', keyColumn: 'code', timestampColumn: 'at', fixpoint: fixpoints.insertOnly(), batchSize: 3 });
    const report = await engine({ specs: [spec] }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: codes.length, outcome: 'drained' });
    expect((await db.sql`select code from text_keyed`).map((r) => r.code)).toEqual(['young']);
    const archived: string[] = [];
    for (const entry of await readLedger(db.sql, { table: 'text_keyed' })) for (const row of await readArchiveObject(store, entry)) archived.push(row.code!);
    expect(archived.sort()).toEqual([...codes].sort());
  });
});

describe('eligibility', () => {
  it('keeps rows inside the hot window, by the database clock', async () => {
    await db.sql`
      insert into audit_events (occurred_at, actor) values
        (now() - interval '30 days' - interval '1 minute', 'just old enough'),
        (now() - interval '30 days' + interval '1 minute', 'just too young'),
        (now(), 'new')`;
    await engine().runCycle();
    expect((await db.sql`select actor from audit_events order by id`).map((r) => r.actor)).toEqual(['just too young', 'new']);
  });

  it('refuses a prefix or service name that would not make a clean key', () => {
    expect(() => engine({ prefix: 'Archive/' })).toThrow(/archive prefix must be slash-separated lower-case segments: "Archive\/"/);
    expect(() => engine({ service: '../lab' })).toThrow(/archive service must be a lower-case key segment/);
  });

  it('a spec may lengthen the hot window but never shorten it', async () => {
    await seed(10, 40);
    const longer = defineArchiveSpec({ ...audit, hotWindowDays: 45 });
    await engine({ specs: [longer] }).runCycle();
    expect(await hotCount()).toBe(10);
    const shorter = defineArchiveSpec({ ...audit, hotWindowDays: 7 });
    expect(() => engine({ specs: [shorter] })).toThrow(/hotWindowDays=7 would shorten the service's hot window of 30 days/);
  });

  it('stops a table at the per-cycle cap and says so; what it left is counted overdue, and a drained table has none', async () => {
    await seed(250, 40);
    // Eligible (past the 30-day window) but within the 48 h grace: archived, never overdue.
    await seed(30, 31);
    const registry = new Registry();
    const overdue = async () => (await registry.getSingleMetric('archive_overdue_rows')!.get()).values.map((v) => v.value);
    const report = await engine({ maxRowsPerCycle: 120, registry }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 120, batches: 2, outcome: 'capped' });
    expect(await hotCount()).toBe(160);
    // Keys in order: the cap took the oldest 120; 130 of the 40-day rows are left, all overdue.
    expect(await overdue()).toEqual([130]);
    const next = await engine({ maxRowsPerCycle: 140, registry }).runCycle();
    expect(next.tables[0]).toMatchObject({ rows: 140, outcome: 'capped' });
    expect(await overdue()).toEqual([0]);
    expect(await hotCount()).toBe(20);
    const last = await engine({ registry }).runCycle();
    expect(last.tables[0]).toMatchObject({ rows: 20, outcome: 'drained' });
    expect(await overdue()).toEqual([0]);
    expect(await hotCount()).toBe(0);
  });
});

describe('lease', () => {
  it('one archiver per database: a cycle while another holds the lease does nothing', async () => {
    await seed(5, 40);
    const report = await withDedicatedSession(db.url, async (other) => {
      expect(await other.tryAdvisoryLock(LOCK_KEYS.archiveLease)).toBe(true);
      return engine().runCycle();
    }, { service: 'other-archiver' });
    expect(report).toMatchObject({ status: 'lease_held', tables: [] });
    expect(await hotCount()).toBe(5);
    // Released with the other session: the next cycle runs.
    expect((await engine().runCycle()).status).toBe('completed');
    expect(await hotCount()).toBe(0);
  });

  it('an aborted cycle stops between batches and reports it', async () => {
    await seed(300, 40);
    const controller = new AbortController();
    const report = await engine({
      afterStore: async () => {
        controller.abort(new Error('shutdown'));
      },
    }).runCycle({ signal: controller.signal });
    expect(report.status).toBe('aborted');
    // The batch in flight either committed or rolled back as a whole; nothing is half done.
    const [{ archived }] = (await db.sql`select coalesce(sum(row_count), 0)::int as archived from archive_ledger`) as unknown as [{ archived: number }];
    expect(archived + (await hotCount())).toBe(300);
  });
});

describe('the outbox hook', () => {
  it('runs in the ledger transaction: its write commits with a good batch', async () => {
    await seed(3, 40);
    await engine({
      onBatchArchived: async (tx, batch) => {
        await tx`insert into announcements (archive_id, table_name, row_count) values (${batch.archiveId}, ${batch.table}, ${batch.rowCount})`;
      },
    }).runCycle();
    const [entry] = await readLedger(db.sql);
    expect(await db.sql`select archive_id::text, table_name, row_count from announcements`).toEqual([{ archive_id: entry!.archiveId, table_name: 'audit_events', row_count: 3 }]);
  });

  it('and rolls back with a failed batch (and a throwing hook fails the batch)', async () => {
    await seed(3, 40);
    const report = await engine({
      afterStore: async () => {
        await db.sql`update audit_events set note = 'changed' where id = (select min(id) from audit_events)`;
      },
      onBatchArchived: async (tx, batch) => {
        await tx`insert into announcements (archive_id, table_name, row_count) values (${batch.archiveId}, ${batch.table}, ${batch.rowCount})`;
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect(await db.sql`select * from announcements`).toEqual([]);

    const failing = await engine({
      onBatchArchived: async (tx) => {
        await tx`insert into announcements (archive_id, table_name, row_count) values (gen_random_uuid(), 'x', 1)`;
        throw new Error('broker staging failed');
      },
    }).runCycle();
    expect(failing.tables[0]).toMatchObject({ outcome: 'failed', error: { message: 'broker staging failed' } });
    expect(await db.sql`select * from announcements`).toEqual([]);
    expect(await readLedger(db.sql)).toEqual([]);
    expect(await hotCount()).toBe(3);
  });
});

describe('operators', () => {
  it('counts rows, bytes and batches by outcome, and logs one line per batch', async () => {
    await seed(150, 40);
    const registry = new Registry();
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const report = await engine({ registry, logger }).runCycle();
    const values = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
    expect(await values('archive_rows_total')).toEqual([{ labels: { table: 'audit_events' }, value: 150 }]);
    expect(await values('archive_bytes_total')).toEqual([{ labels: { table: 'audit_events' }, value: report.tables[0]!.bytes }]);
    expect(await values('archive_batches_total')).toEqual([{ labels: { table: 'audit_events', outcome: 'archived' }, value: 2 }]);
    expect(await values('archive_foreign_objects_total')).toEqual([]);
    // Everything eligible went: nothing overdue after the cycle.
    expect(await values('archive_overdue_rows')).toEqual([{ labels: { table: 'audit_events' }, value: 0 }]);
    const batchLines = lines.filter((l) => l.msg === 'archive batch');
    expect(batchLines).toHaveLength(2);
    expect(batchLines[0]).toMatchObject({ service: 'lab', table: 'audit_events', outcome: 'archived', rows: 100, key: expect.stringMatching(/^archive\/lab\/audit_events\//), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(lines.filter((l) => l.msg === 'archive cycle done')).toHaveLength(1);
  });
});

describe('purge', () => {
  it('is refused with a typed error, by the engine and by the ledger itself', async () => {
    const error = await rejection(engine().purge({ table: 'audit_events', before: '2020-01-01', reason: 'disk full' }));
    expect(error).toBeInstanceOf(PurgeRefusedError);
    expect(error).toMatchObject({ code: 'purge_refused', retryable: false, service: 'lab', request: { table: 'audit_events' } });

    await seed(2, 40);
    await engine().runCycle();
    await expect(db.sql`delete from archive_ledger`).rejects.toThrow(/archive_ledger is append-only: DELETE refused/);
    await expect(db.sql`update archive_ledger set row_count = 1`).rejects.toThrow(/UPDATE refused/);
    await expect(db.sql`truncate archive_ledger`).rejects.toThrow(/TRUNCATE refused/);
    expect(await readLedger(db.sql)).toHaveLength(1);
  });
});
