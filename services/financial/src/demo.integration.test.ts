// The devstack's aged history: rows financial's writers could have left, with work for both sweeps.
import { pruneTransportTables, retentionOverrun } from '@craig/mq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { reconcileRetentionSpecs } from './reconcile-sweep.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'financial_demo' });
});
afterAll(() => h.drop());

describe('financial demo', () => {
  it('seeds settled rows past the window (some far older), recent settled, matched and pending rows, their imports, inbox and outbox', async () => {
    await demo.seedAgedHistory(h.db.sql, { rows: 100 });
    const rows = await h.db.sql<{ status: string; n: number }[]>`select status, count(*)::int as n from subsidy_reconcile_queue group by 1 order by 1`;
    expect(rows).toEqual([
      { status: 'matched', n: 5 },
      { status: 'pending', n: 10 },
      { status: 'settled', n: 110 },
    ]);
    const [ages] = await h.db.sql<{ overdue: number; far: number; inside: number; aged_pending: number; inbox_aged: number; outbox_aged: number; outbox_pending: number; imports_ok: boolean }[]>`
      select (select count(*)::int from subsidy_reconcile_queue where status = 'settled' and settled_at < now() - interval '100 days' + interval '1 minute') as overdue,
             (select count(*)::int from subsidy_reconcile_queue where status = 'settled' and settled_at < now() - interval '1000 days') as far,
             (select count(*)::int from subsidy_reconcile_queue where status = 'settled' and settled_at between now() - interval '61 days' and now() - interval '40 days') as inside,
             (select count(*)::int from subsidy_reconcile_queue where status = 'pending' and enqueued_at < now() - interval '90 days') as aged_pending,
             (select count(*)::int from event_inbox where received_at < now() - interval '32 days') as inbox_aged,
             (select count(*)::int from event_outbox where published_at is not null and created_at between now() - interval '61 days' and now() - interval '40 days') as outbox_aged,
             (select count(*)::int from event_outbox where published_at is null and created_at < now() - interval '40 days') as outbox_pending,
             (select bool_and(i.row_count = (select count(*) from subsidy_import_lines l where l.import_id = i.id)) from subsidy_imports i) as imports_ok`;
    expect(ages).toEqual({ overdue: 100, far: 10, inside: 10, aged_pending: expect.any(Number), inbox_aged: expect.any(Number), outbox_aged: 7, outbox_pending: 3, imports_ok: true });
    expect(ages!.aged_pending).toBeGreaterThan(0);
    expect(ages!.inbox_aged).toBeGreaterThan(100);
    for (const table of demo.tables) expect((await h.db.sql`select to_regclass(${table}) is not null as exists`)[0]).toEqual({ exists: true });

    // The invariant is red on the seeded history; one sweep takes exactly the overdue settled rows.
    const [spec] = reconcileRetentionSpecs(90);
    expect(await retentionOverrun(h.db.sql, spec!)).toMatchObject({ ok: false, overdueRows: 100 });
    const swept = await call(h.app, 'POST', '/v1/admin/reconcile/sweep', { token: ADMIN_TOKEN });
    expect(swept.body).toMatchObject({ status: 'pruned', deleted: 100 });
    expect(await retentionOverrun(h.db.sql, spec!)).toMatchObject({ ok: true });
    // The transport sweep keeps the three aged pending outbox rows.
    const cycle = await pruneTransportTables({ databaseUrl: h.db.url, service: 'financial', retention: { outboxDays: 30, inboxDays: 31 } });
    expect(cycle.skipped).toBe(false);
    expect((await h.db.sql`select count(*)::int as n from event_outbox where published_at is null`)[0]!.n).toBe(3);
  });

  it('tick imports a few pending rows over HTTP and settles them', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as { port: number };
    const context = (tick: number, url: string | undefined) => ({ urlOf: (s: string) => (s === 'financial' ? url : undefined), adminToken: ADMIN_TOKEN, signal: new AbortController().signal, random: () => 0.5, tick });
    const before = await h.db.sql<{ n: number }[]>`select count(*)::int as n from subsidy_reconcile_queue where status = 'pending'`;
    await demo.tick!(context(0, `http://127.0.0.1:${port}`));
    const after = await h.db.sql<{ pending: number; matched: number; events: number }[]>`
      select count(*) filter (where status = 'pending')::int as pending, count(*) filter (where status = 'matched')::int as matched,
             (select count(*)::int from event_outbox where event_type = 'subsidy.settled' and created_at > now() - interval '1 minute') as events
      from subsidy_reconcile_queue`;
    expect(after[0]).toEqual({ pending: before[0]!.n - 5, matched: 0, events: 10 });
    // Only every tenth tick does anything; not running: nothing to do; an error answer is thrown.
    await demo.tick!(context(1, `http://127.0.0.1:${port}/nowhere`));
    await demo.tick!(context(10, undefined));
    await expect(demo.tick!(context(20, `http://127.0.0.1:${port}/nowhere`))).rejects.toThrow('GET /v1/reconcile-queue answered 404');
  });
});
