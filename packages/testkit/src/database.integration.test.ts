import postgresJs from 'postgres';
import { describe, expect, it } from 'vitest';
import { testDatabase } from './database.ts';

describe('testDatabase', () => {
  it('copies a template built once, and each copy is its own database', async () => {
    let builds = 0;
    const id = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const template = {
      id,
      build: async (url: string) => {
        builds++;
        const sql = postgresJs(url, { max: 1, onnotice: () => {} });
        await sql`create table seeded (n int)`;
        await sql`insert into seeded values (42)`;
        await sql.end();
      },
    };
    const [a, b] = await Promise.all([testDatabase({ template, prefix: 'inventory_t' }), testDatabase({ template })]);
    try {
      expect(builds).toBe(1);
      expect(a.name).toMatch(/^inventory_t_[a-z0-9]+_[0-9a-f]{8}$/);
      expect(a.name).not.toBe(b.name);
      expect((await a.sql`select n from seeded`)[0]?.n).toBe(42);
      await a.sql`insert into seeded values (1)`;
      expect((await b.sql`select count(*)::int as c from seeded`)[0]?.c).toBe(1);
      const [db] = await a.sql`select current_database() as name`;
      expect(db?.name).toBe(a.name);
    } finally {
      await Promise.all([a.drop(), b.drop()]);
    }
    const c = await testDatabase({ template });
    expect(builds).toBe(1);
    const [gone] = await c.sql`select count(*)::int as n from pg_database where datname = ${a.name}`;
    expect(gone?.n).toBe(0);
    await c.drop();
    await (await testDatabase()).drop();
  });

  it('refuses a prefix that is not a plain identifier', async () => {
    await expect(testDatabase({ prefix: 'x; drop database postgres' })).rejects.toThrow(/prefix/);
  });
});
