import type { TestDatabase } from '@craig/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fixtureDatabase } from '../../test/fixtures.ts';
import { registerArchiveSpecs } from '../prune-gate.ts';
import { defineArchiveSpec, fixpoints } from '../spec.ts';
import { CANONICAL_OUTPUT, selectBatch, type BodySink } from './batch-sql.ts';
import { planTable, type TablePlan } from './catalog.ts';
import postgres from 'postgres';

// The engine writes each archived row's JSON line itself from the COPY's text fields: whatever
// a column holds, the line must parse to exactly what PostgreSQL's own row_to_json of the same
// texts says, and the batch's ids and span must be the rows'.
let db: TestDatabase;
let reader: postgres.Sql;
let plan: TablePlan;
const spec = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });

beforeAll(async () => {
  db = await fixtureDatabase('ret_batch');
  await registerArchiveSpecs(db.sql, [spec], 30);
  reader = postgres(db.url, { max: 1, onnotice: () => {}, connection: { ...CANONICAL_OUTPUT } });
  plan = await planTable(reader, spec, 30);
});
afterAll(async () => {
  await reader.end({ timeout: 1 });
  await db.drop();
});
beforeEach(async () => {
  await db.sql`truncate audit_events`;
});

function collect(): BodySink & { text(): string } {
  const pieces: Buffer[] = [];
  return { write: (p) => pieces.push(Buffer.from(p)) > 0, whenDrained: (resume) => resume(), piece: () => Buffer.allocUnsafe(256 * 1024), text: () => Buffer.concat(pieces).toString('utf8') };
}

/** Every column of the plan's table as its text, under its own name. */
function textColumns(of: TablePlan) {
  return of.columns.map((c) => reader`${reader(`t.${c}`)}::text as ${reader(c)}`).reduce((a, b) => reader`${a}, ${b}`);
}

/**
 * The exact bytes each line must have: `{"col":value,…}`, every value the JSON string of the
 * column's text (JavaScript's and PostgreSQL's escaping agree on every string PostgreSQL can
 * hold) or null. Archives written before ADR-072 (lines built in Node) have these same bytes.
 */
async function expectedBody(of: TablePlan = plan): Promise<string> {
  const columns = textColumns(of);
  const rows = await reader<Record<string, string | null>[]>`select ${columns} from ${reader(of.spec.table)} t order by t.id`;
  return rows.map((r) => `{${of.columns.map((c) => `${JSON.stringify(c)}:${r[c] === null ? 'null' : JSON.stringify(r[c])}`).join(',')}}\n`).join('');
}

/** PostgreSQL's row_to_json of every column as text, in the reader's canonical settings. */
async function postgresLines(of: TablePlan = plan): Promise<unknown[]> {
  const columns = textColumns(of);
  const rows = await reader<{ line: string }[]>`select row_to_json(c)::text as line from ${reader(of.spec.table)} t cross join lateral (select ${columns}) c order by t.id`;
  return rows.map((r) => JSON.parse(r.line) as unknown);
}

// Any text PostgreSQL can hold: control characters, quotes, backslashes, every plane of Unicode.
const text = fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 })).map((s) => s.replace(/\0/g, '').replace(/[\uD800-\uDFFF]/g, ''));

describe('the batch COPY', () => {
  it('writes JSON lines that parse to what row_to_json says, for any text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, fc.option(text), fc.option(fc.array(fc.option(text), { maxLength: 3 }))), { minLength: 1, maxLength: 8 }), async (values) => {
        await db.sql`truncate audit_events`;
        for (const [actor, note, tags] of values) {
          await db.sql`insert into audit_events (occurred_at, actor, note, tags, payload) values (now() - interval '40 days', ${actor}, ${note}, ${tags as string[] | null}, ${db.sql.json({ actor, note })})`;
        }
        const sink = collect();
        const batch = await selectBatch(reader, plan, 30, 100, undefined, sink);
        const lines = sink.text().split('\n');
        expect(lines.pop()).toBe('');
        expect(batch.count).toBe(values.length);
        expect(batch.rawBytes).toBe(Buffer.byteLength(sink.text()));
        expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(await postgresLines());
        expect(sink.text()).toBe(await expectedBody());
      }),
      { numRuns: 40 },
    );
  });

  it('copies the texts of number, uuid, boolean and date/time types unscanned and still writes what row_to_json says', async () => {
    // These types' texts go into the JSON unscanned (PLAIN_TYPES): their extremes, and a domain
    // over text (which must take the escaping path), against PostgreSQL's own JSON of the texts.
    // The last column's name holds a quote, double quotes and a backslash: it is written into
    // the line by the statement itself (a COPY takes no parameters).
    await db.sql`create domain pretty_text as text`;
    await db.sql`
      create table plain_values (
        id bigint primary key, occurred_at timestamptz not null, i2 smallint, i4 integer, n numeric, r real, d double precision,
        o oid, u uuid, b boolean, day date, ts timestamp, t time, dom pretty_text, "it's a ""name"" \\ too" text)`;
    const plainSpec = defineArchiveSpec({ table: 'plain_values', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });
    try {
      await registerArchiveSpecs(db.sql, [spec, plainSpec], 30);
      await db.sql`
        insert into plain_values values
          (-9223372036854775808, '-infinity', -32768, -2147483648, 'NaN', 'NaN', 'Infinity', 4294967295, '00000000-0000-0000-0000-000000000000', true, '4713-01-01 BC', '4713-01-01 00:00:00 BC', '24:00:00', 'say "hi"\\ 	', 'x'),
          (0, '4713-01-01 00:00:00+00 BC', 32767, 2147483647, '-123456789012345678901234567890.000000000001', '-Infinity', '-0', 0, 'ffffffff-ffff-ffff-ffff-ffffffffffff', false, 'infinity', 'infinity', '00:00:00.000001', null, null),
          (1, '2019-06-01 12:00:00.25+00', null, null, 'Infinity', 1.5e-45, 1e308, null, null, null, '5874897-12-31', '294276-12-31 23:59:59.999999', null, E'line\nbreak', '"'),
          (9223372036854775807, '2020-01-01 00:00:00+00', 1, 1, '-Infinity', 3.4e38, 4.9e-324, 1, gen_random_uuid(), true, '2026-12-04', '2026-12-04 01:02:03.5', '23:59:59.999999', '', E'\\\\')`;
      const valuesPlan = await planTable(reader, plainSpec, 30);
      const sink = collect();
      const batch = await selectBatch(reader, valuesPlan, 30, 10, undefined, sink);
      const lines = sink.text().split('\n').slice(0, -1);
      expect(batch.count).toBe(4);
      expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(await postgresLines(valuesPlan));
      expect(sink.text()).toBe(await expectedBody(valuesPlan));
      const [span] = await reader<{ min: string; max: string }[]>`select min(occurred_at)::text as min, max(occurred_at)::text as max from plain_values`;
      expect(batch).toMatchObject({ minKey: '-9223372036854775808', maxKey: '9223372036854775807', minTs: span!.min, maxTs: span!.max });
      expect(batch.keys).toBe('{"-9223372036854775808","0","1","9223372036854775807"}');
    } finally {
      await registerArchiveSpecs(db.sql, [spec], 30);
      await db.sql`drop table plain_values`;
      await db.sql`drop domain pretty_text`;
    }
  });

  it('pauses the COPY while the sink is full and loses nothing when it resumes', async () => {
    // ~1.3 MB of body: five pieces, each refused by a sink that drains only 20 ms later.
    await db.sql`insert into audit_events (occurred_at, actor, note) select now() - interval '40 days', 'a-' || g, repeat(md5(g::text), 40) from generate_series(1, 1000) g`;
    const pieces: Buffer[] = [];
    let pauses = 0;
    const slow: BodySink = {
      write: (p) => (pieces.push(Buffer.from(p)), false),
      whenDrained: (resume) => void (pauses++, setTimeout(resume, 20)),
      piece: () => Buffer.allocUnsafe(256 * 1024),
    };
    const batch = await selectBatch(reader, plan, 30, 5000, undefined, slow);
    const lines = Buffer.concat(pieces).toString('utf8').split('\n').slice(0, -1);
    expect(batch.count).toBe(1000);
    expect(pauses).toBeGreaterThanOrEqual(4);
    expect(lines.map((l) => (JSON.parse(l) as { actor: string }).actor)).toEqual(Array.from({ length: 1000 }, (_, i) => `a-${i + 1}`));
    // The connection is usable afterwards (a paused COPY must not leave its socket paused).
    expect(await reader`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it('carries the ids the gate needs, in key order, and the span of the timestamps', async () => {
    await db.sql`insert into audit_events (id, occurred_at, actor) values (10, '2020-01-01 00:00:00+00', 'a"b'), (11, '2019-06-01 12:00:00.25+00', 'c\\d'), (12, '2020-03-01 00:00:00+00', 'e')`;
    const rows = await reader<{ ctid: string; xmin: string }[]>`select ctid::text, xmin::text from audit_events order by id`;
    const batch = await selectBatch(reader, plan, 30, 2, '9', collect());
    expect(batch).toMatchObject({ count: 2, minKey: '10', maxKey: '11', minTs: '2019-06-01 12:00:00.25+00', maxTs: '2020-01-01 00:00:00+00' });
    expect(batch.keys).toBe('{"10","11"}');
    expect(batch.ctids).toBe(`{"${rows[0]!.ctid}","${rows[1]!.ctid}"}`);
    expect(batch.xmins).toBe(`{"${rows[0]!.xmin}","${rows[1]!.xmin}"}`);
    // After the last key nothing is eligible: an empty batch, not an error.
    expect(await selectBatch(reader, plan, 30, 5, '12', collect())).toMatchObject({ count: 0, rawBytes: 0, keys: '{}' });
    await expect(selectBatch(reader, plan, 30, 0, undefined, collect())).rejects.toThrow(RangeError);
  });

  it('reads its bound values once per statement (an InitPlan), not once for every row its filter checks', async () => {
    await db.sql`create table bound_probe (id bigint primary key, occurred_at timestamptz not null, status text not null)`;
    await db.sql`insert into bound_probe select g, now() - interval '40 days', case when g % 2 = 0 then 'done' else 'open' end from generate_series(1, 10) g`;
    const probe = defineArchiveSpec({ table: 'bound_probe', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.terminalStatus('status', ['done', 'void']) });
    await registerArchiveSpecs(db.sql, [probe], 30);
    const statements: string[] = [];
    const traced = postgres(db.url, { max: 1, onnotice: () => {}, connection: { ...CANONICAL_OUTPUT }, debug: (_connection, query) => void statements.push(query) });
    try {
      const batch = await selectBatch(traced, await planTable(traced, probe, 30), 30, 100, '3', collect());
      expect(batch).toMatchObject({ count: 4, minKey: '4', maxKey: '10' });
      // The COPY's query, planned in the same session (its values are that session's settings).
      const copy = statements.find((q) => q.trimStart().startsWith('copy ('))!;
      const query = copy.slice(copy.indexOf('(') + 1, copy.lastIndexOf(') to stdout'));
      const lines = (await traced.unsafe<{ 'QUERY PLAN': string }[]>(`explain (costs off) ${query}`)).map((r) => r['QUERY PLAN']).join('\n');
      // The key bound, the hot window and the fixpoint's values are each one InitPlan's
      // parameter; no filter or index condition calls current_setting (nor parses an array) per row.
      expect(lines.match(/InitPlan \d+/g)).toHaveLength(3);
      expect(lines).not.toContain('current_setting');
    } finally {
      await traced.end({ timeout: 1 });
      await db.sql`drop table bound_probe`;
    }
  });
});
