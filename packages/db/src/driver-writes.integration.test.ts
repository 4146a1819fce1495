import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(() => db.drop());

const TEXT = 25;

describe('the driver sending parameters (patches/postgres@3.4.9.patch)', () => {
  it('sends a Uint8Array given as text as its UTF-8 bytes, a view of a larger buffer included', async () => {
    const text = 'héllo € 😀';
    const bytes = Buffer.from(`xx${text}yy`).subarray(2, 2 + Buffer.byteLength(text));
    const plain = new Uint8Array(Buffer.from(text));
    const [row] = await db.sql<{ a: string; a_bytes: number; b: string }[]>`
      select ${db.sql.typed(bytes, TEXT)}::text as a,
             octet_length(${db.sql.typed(bytes, TEXT)}::text) as a_bytes,
             ${db.sql.typed(plain, TEXT)}::text as b`;
    expect(row).toEqual({ a: text, a_bytes: Buffer.byteLength(text), b: text });
  });

  it('refuses bytes that are not UTF-8 (the server checks them), and the session goes on', async () => {
    const conn = await db.sql.reserve();
    try {
      const invalid = Buffer.from([0x61, 0xff, 0x62]);
      await expect(conn`select ${conn.typed(invalid, TEXT)}::text as t`).rejects.toMatchObject({ code: '22021' });
      const [after] = await conn<{ n: number }[]>`select 41 + 1 as n`;
      expect(after!.n).toBe(42);
    } finally {
      conn.release();
    }
  });

  it('keeps each of many pipelined statements its own parameters (no message buffer reused under another)', async () => {
    // Large and small messages queued on one connection at once: each is written from a buffer
    // of its own, so none may carry another's bytes.
    const conn = await db.sql.reserve();
    try {
      const values = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? `${i}:${'é'.repeat(200_000 + i)}` : `${i}:short`));
      const rows = await Promise.all(values.map((v) => conn<{ v: string; n: number; len: number }[]>`select ${v}::text as v, length(${v}::text) as len, split_part(${v}::text, ':', 1)::int as n`));
      expect(rows.map((r) => r[0]!.n)).toEqual(values.map((_, i) => i));
      expect(rows.map((r) => r[0]!.len)).toEqual(values.map((v) => v.length));
      expect(rows.every((r, i) => r[0]!.v === values[i])).toBe(true);
    } finally {
      conn.release();
    }
  });

  it('sends a Bind with its Execute in one message buffer, for a cursor too (its Execute asks for rows at a time)', async () => {
    // A parameter large enough that the Bind's buffer grows to hold it; the Execute follows it.
    const big = 'é'.repeat(300_000);
    const [one] = await db.sql<{ len: number }[]>`select length(${big}::text) as len`;
    expect(one!.len).toBe(big.length);
    const seen: number[] = [];
    for await (const rows of db.sql<{ i: number; len: number }[]>`select i, length(${big}::text) as len from generate_series(1, 1000) as i order by i`.cursor(300)) {
      expect(rows.every((r) => r.len === big.length)).toBe(true);
      seen.push(...rows.map((r) => r.i));
    }
    expect(seen).toEqual(Array.from({ length: 1000 }, (_, k) => k + 1));
  });
});
