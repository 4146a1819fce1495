import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());

/** Rows of every length from 1 to 2,999 characters, so that messages end at every offset of a socket read. */
const ROWS = 20_000;
const FILL = ['a', 'é', 'z', '€'] as const;
/** Row i is 1 + (i × STRIDE mod SPAN) characters long: a stride prime to the span visits every length. */
const STRIDE = 7919;
const SPAN = 2999;
const lengthOf = (i: number) => 1 + ((i * STRIDE) % SPAN);
/** Row i's text, as the server builds it below: its number, a colon, then one fill character (some of them multi-byte, split across reads too). */
function expected(i: number): string {
  const head = `${i}:`;
  return head + FILL[i % FILL.length]!.repeat(Math.max(0, lengthOf(i) - head.length));
}
const ROW = `rpad(i || ':', greatest(1 + (i * ${STRIDE}) % ${SPAN}, length(i || ':')), (array[${FILL.map((f) => `'${f}'`).join(', ')}])[i % ${FILL.length} + 1])`;
const ROWS_SQL = `select i, ${ROW} as t from generate_series(1, ${ROWS}) as i order by i`;

describe('the driver reading results that straddle socket reads (patches/postgres@3.4.9.patch)', () => {
  it('hands over every row of a large result intact and in order', async () => {
    const rows = await db.sql.unsafe<{ i: number; t: string }[]>(ROWS_SQL);
    expect(rows).toHaveLength(ROWS);
    const wrong = rows.filter((r, k) => r.i !== k + 1 || r.t !== expected(k + 1)).map((r) => r.i);
    expect(wrong).toEqual([]);
  });

  it('joins a value many reads long between small rows, and goes on with the rows in the same read after it', async () => {
    const big = 6 * 1024 * 1024;
    const rows = await db.sql<{ k: number; t: string }[]>`
      select k, case when k = 2 then repeat('ab', ${big / 2}::int) else 'row ' || k end as t
      from generate_series(1, 5) as k order by k`;
    expect(rows.map((r) => r.k)).toEqual([1, 2, 3, 4, 5]);
    expect(rows[1]!.t.length).toBe(big);
    expect(rows[1]!.t === 'ab'.repeat(big / 2)).toBe(true);
    expect([rows[0]!.t, rows[2]!.t, rows[3]!.t, rows[4]!.t]).toEqual(['row 1', 'row 3', 'row 4', 'row 5']);
  });

  it('streams a COPY … TO STDOUT of many rows byte for byte, one message a row', async () => {
    const stream = await db.sql.unsafe(`copy (select ${ROW} from generate_series(1, ${ROWS}) as i order by i) to stdout`).readable();
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const lines = Buffer.concat(chunks).toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(ROWS);
    const wrong = lines.flatMap((line, k) => (line === expected(k + 1) ? [] : [k + 1]));
    expect(wrong).toEqual([]);
  });

  it('answers the next query on the same connection after a large result', async () => {
    const conn = await db.sql.reserve();
    try {
      const rows = await conn.unsafe<{ i: number; t: string }[]>(ROWS_SQL);
      expect(rows.at(-1)).toEqual({ i: ROWS, t: expected(ROWS) });
      const [after] = await conn<{ n: number }[]>`select 41 + 1 as n`;
      expect(after!.n).toBe(42);
    } finally {
      conn.release();
    }
  });
});
