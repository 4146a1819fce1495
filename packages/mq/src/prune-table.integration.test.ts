import { createClient } from '@craig/db';
import { eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { definePruneTarget, pruneTable } from './prune-table.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
  await db.sql`
    create table events (
      id bigserial primary key,
      created_at timestamptz not null default now(),
      published_at timestamptz
    )`;
  await db.sql`create index events_prune on events (created_at) where published_at is not null`;
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate events`;
});

const aged = definePruneTarget({
  table: 'events',
  orderBy: 'created_at',
  eligible: (sql) => sql`published_at is not null and created_at < now() - make_interval(days => ${30})`,
});

/** n rows: `published` of them published, all created `ageDays` ago (offset per row to order them). */
async function seed(n: number, opts: { ageDays: number; published: boolean }) {
  await db.sql`
    insert into events (created_at, published_at)
    select now() - make_interval(days => ${opts.ageDays}) + make_interval(secs => g),
           case when ${opts.published} then now() - make_interval(days => ${opts.ageDays}) + make_interval(secs => g + 1) end
    from generate_series(1, ${n}) g`;
}
const count = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from events`)[0]!.n;

describe('pruneTable', () => {
  it('deletes exactly the eligible rows across batches, oldest first, and reports an exact count', async () => {
    await seed(1050, { ageDays: 40, published: true });
    await seed(70, { ageDays: 40, published: false }); // pending: never eligible
    await seed(30, { ageDays: 5, published: true }); // fresh
    const batches: number[] = [];
    const result = await pruneTable(db.sql, aged, { batchSize: 100, onBatch: (b) => batches.push(b.deleted) });
    expect(result).toEqual({ deleted: 1050, batches: 11, capped: false, aborted: false });
    expect(batches).toEqual([100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 50]);
    expect(await count()).toBe(100);
    const [left] = await db.sql`select count(*) filter (where published_at is null)::int as pending, count(*) filter (where created_at > now() - interval '30 days')::int as fresh from events`;
    expect(left).toEqual({ pending: 70, fresh: 30 });
  });

  it('stops at the cap with rows left and says so', async () => {
    await seed(1000, { ageDays: 40, published: true });
    const result = await pruneTable(db.sql, aged, { batchSize: 100, cap: 250 });
    expect(result).toEqual({ deleted: 250, batches: 3, capped: true, aborted: false });
    expect(await count()).toBe(750);
    // The oldest went first.
    const [oldest] = await db.sql`select min(created_at) < max(created_at) as ordered, count(*)::int as n from events where created_at < (select min(created_at) from events) + interval '250 seconds'`;
    expect(oldest?.n).toBe(250);
  });

  it('an exact multiple of the cap is not capped when nothing eligible is left', async () => {
    await seed(200, { ageDays: 40, published: true });
    expect(await pruneTable(db.sql, aged, { batchSize: 100, cap: 300 })).toMatchObject({ deleted: 200, capped: false });
  });

  it('walks forward: a row that becomes eligible behind the batches during a call is left for the next call', async () => {
    await seed(300, { ageDays: 40, published: true });
    let inserted = false;
    const first = await pruneTable(db.sql, aged, {
      batchSize: 100,
      onBatch: async () => {
        if (inserted) return;
        inserted = true;
        await db.sql`insert into events (created_at, published_at) values (now() - interval '50 days', now() - interval '50 days')`;
      },
    });
    expect(first).toMatchObject({ deleted: 300, batches: 4 });
    expect(await count()).toBe(1);
    expect(await pruneTable(db.sql, aged, { batchSize: 100 })).toMatchObject({ deleted: 1 });
  });

  it('stops between batches when aborted', async () => {
    await seed(1000, { ageDays: 40, published: true });
    const controller = new AbortController();
    const result = await pruneTable(db.sql, aged, {
      batchSize: 100,
      signal: controller.signal,
      onBatch: (b) => b.total >= 200 && controller.abort(),
    });
    expect(result).toEqual({ deleted: 200, batches: 2, capped: false, aborted: true });
    expect(await count()).toBe(800);
  });

  /**
   * A replay re-nulls the victim's published_at in an open transaction; the prune starts
   * meanwhile (its snapshot still sees the row eligible) and its DELETE blocks on the row lock.
   * Returns the prune's result and the query that waited, after the writer committed.
   */
  async function pruneWhileReplayed(victimId: string, batchSize: number): Promise<{ result: unknown; waitedOn: string }> {
    const writer = postgres(db.url, { max: 1, onnotice: () => {} });
    const pruner = createClient(db.url, { service: 'test', max: 1 });
    try {
      let prune: Promise<unknown> | undefined;
      let waitedOn = '';
      await writer.begin(async (tx) => {
        await tx`update events set published_at = null where id = ${victimId}`;
        prune = pruneTable(pruner, aged, { batchSize });
        await eventually(async () => {
          const waiting = await db.sql<{ query: string }[]>`select query from pg_stat_activity where wait_event_type = 'Lock' and query like '%delete from%'`;
          expect(waiting).toHaveLength(1);
          waitedOn = waiting[0]!.query;
        });
      });
      return { result: await prune, waitedOn };
    } finally {
      await Promise.all([writer.end(), pruner.end()]);
    }
  }

  it('keeps a row that a concurrent writer made ineligible while the delete waited for it', async () => {
    await seed(10, { ageDays: 40, published: true });
    const [victim] = await db.sql<{ id: string }[]>`select id::text from events order by created_at limit 1`;
    // Ten rows, batches of 100: the last-batch (ctid) statement.
    const { result, waitedOn } = await pruneWhileReplayed(victim!.id, 100);
    expect(waitedOn).toContain('ctid');
    expect(result).toMatchObject({ deleted: 9 });
    const [kept] = await db.sql`select published_at from events where id = ${victim!.id}`;
    expect(kept).toEqual({ published_at: null });
  });

  it('a range batch also keeps a row a concurrent writer made ineligible while its delete waited, and goes on past it', async () => {
    await seed(300, { ageDays: 40, published: true });
    // The 50th oldest: inside the first batch's range [start, 101st key).
    const [victim] = await db.sql<{ id: string }[]>`select id::text from events order by created_at offset 49 limit 1`;
    const { result, waitedOn } = await pruneWhileReplayed(victim!.id, 100);
    // The range statement (by key bounds), not the ctid one.
    expect(waitedOn).not.toContain('ctid');
    expect(result).toMatchObject({ deleted: 299, capped: false, aborted: false });
    const rows = await db.sql<{ id: string; published_at: Date | null }[]>`select id::text, published_at from events`;
    expect(rows).toEqual([{ id: victim!.id, published_at: null }]);
  });

  it('more rows tied on one key than a batch holds: each batch stays within its limit and every eligible row goes', async () => {
    // 250 rows on one created_at, then 120 later ones, then 10 pending on the tie.
    await db.sql`insert into events (created_at, published_at) select now() - interval '40 days', now() - interval '39 days' from generate_series(1, 250)`;
    await seed(120, { ageDays: 35, published: true });
    await db.sql`insert into events (created_at, published_at) select now() - interval '40 days', null from generate_series(1, 10)`;
    const batches: Array<{ deleted: number; limit: number }> = [];
    const result = await pruneTable(db.sql, aged, { batchSize: 100, onBatch: (b) => void batches.push({ deleted: b.deleted, limit: b.limit }) });
    expect(result).toMatchObject({ deleted: 370, capped: false, aborted: false });
    expect(batches.every((b) => b.deleted > 0 && b.deleted <= b.limit)).toBe(true);
    expect(batches.reduce((n, b) => n + b.deleted, 0)).toBe(370);
    expect(await count()).toBe(10);
  });

  it('adaptive batches grow while they are fast, never past the maximum or the cap, and the count stays exact', async () => {
    await seed(3000, { ageDays: 40, published: true });
    await seed(50, { ageDays: 40, published: false });
    const limits: number[] = [];
    // A generous target: every batch of these few rows is far under it, so each one doubles.
    const result = await pruneTable(db.sql, aged, { batchSize: 100, targetBatchMs: 10_000, maxBatchSize: 700, cap: 2_900, onBatch: (b) => void limits.push(b.limit) });
    expect(limits).toEqual([100, 200, 400, 700, 700, 700, 100]);
    expect(result).toEqual({ deleted: 2_900, batches: 7, capped: true, aborted: false });
    expect(await count()).toBe(150);
  });

  it('an adaptive batch over its target shrinks the next, never below batchSize', async () => {
    await seed(1000, { ageDays: 40, published: true });
    const limits: number[] = [];
    // A target no batch can meet: after the first growth nothing grows, each batch halves to the floor.
    const result = await pruneTable(db.sql, aged, { batchSize: 100, targetBatchMs: 0.001, maxBatchSize: 800, onBatch: (b) => void limits.push(b.limit) });
    expect(limits.every((l) => l === 100)).toBe(true);
    expect(result).toMatchObject({ deleted: 1000, batches: 11 });
  });

  it('refuses identifiers that are not plain names and nonsense sizes', async () => {
    await expect(pruneTable(db.sql, aged, { batchSize: 100, targetBatchMs: 0 })).rejects.toThrow(RangeError);
    await expect(pruneTable(db.sql, aged, { batchSize: 100, maxBatchSize: 50 })).rejects.toThrow(/maxBatchSize/);
    expect(() => definePruneTarget({ ...aged, table: 'events; drop table x' })).toThrow(TypeError);
    expect(() => definePruneTarget({ ...aged, orderBy: 'Created_At' })).toThrow(TypeError);
    await expect(pruneTable(db.sql, aged, { batchSize: 0 })).rejects.toThrow(RangeError);
    await expect(pruneTable(db.sql, aged, { cap: 1.5 })).rejects.toThrow(RangeError);
  });
});
