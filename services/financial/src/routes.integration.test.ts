// The HTTP API on a real database: imports (validated whole, matched in one transaction),
// settlement (events staged in the same transaction), the bounded queue listing, the on-demand sweep.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, seedQueue, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'financial_routes' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate subsidy_reconcile_queue, subsidy_import_lines, subsidy_imports, event_outbox, prune_latch`;
  await h.db.sql`drop trigger if exists refuse_settled_events on event_outbox`;
});

async function pending(placement: string, n = 1): Promise<void> {
  await seedQueue(h.db.sql, { status: 'pending', count: n, ageDays: 3, placement });
}

// Imports and lines the API wrote (seedQueue's own imports are `seed-…`).
const counts = async () =>
  (
    await h.db.sql<{ imports: number; lines: number; outbox: number }[]>`
      select (select count(*)::int from subsidy_imports where source not like 'seed-%') as imports, (select count(*)::int from subsidy_import_lines) as lines,
             (select count(*)::int from event_outbox) as outbox`
  )[0];

describe('POST /v1/subsidy-imports', () => {
  it('records the import and matches pending rows by placement, oldest first, one row per line', async () => {
    await pending('pl-a', 2);
    await pending('pl-b');
    await seedQueue(h.db.sql, { status: 'matched', count: 1, ageDays: 5, placement: 'pl-c' });
    const res = await call(h.app, 'POST', '/v1/subsidy-imports', {
      body: { source: 'county-a', period: '2026-11', lines: [{ placementId: 'pl-a', amount: '1250.50' }, { placementId: 'pl-c', amount: 10 }, { placementId: 'pl-a', amount: '99.99' }] },
    });
    expect(res.status).toBe(201);
    expect(res.body.import).toMatchObject({ source: 'county-a', period: '2026-11-01', status: 'completed', rowCount: 3, matched: 2, unmatchedLines: [1] });
    const rows = await h.db.sql<{ placement_id: string; status: string; amount: string | null; import_line: number | null }[]>`
      select placement_id, status, amount::text, import_line from subsidy_reconcile_queue order by placement_id, enqueued_at, id`;
    // pl-a's two rows (the older is seeded first with the larger age) take the lines in order; pl-b waits; pl-c was already matched.
    expect(rows.map((r) => [r.placement_id, r.status, r.amount, r.import_line])).toEqual([
      ['pl-a', 'matched', '1250.50', 1],
      ['pl-a', 'matched', '99.99', 3],
      ['pl-b', 'pending', null, null],
      ['pl-c', 'matched', '10.00', null],
    ]);
    const [imp] = await h.db.sql`select status, row_count, matched_count, completed_at is not null as completed from subsidy_imports where source = 'county-a'`;
    expect(imp).toEqual({ status: 'completed', row_count: 3, matched_count: 2, completed: true });
    expect((await h.db.sql`select line_no, matched from subsidy_import_lines order by line_no`).map((l) => l.matched)).toEqual([true, false, true]);
  });

  it('a bad line is a 400 naming the line and the value, and nothing is written', async () => {
    await pending('pl-a');
    const res = await call(h.app, 'POST', '/v1/subsidy-imports', {
      body: { source: 'county-a', period: '2026-11', lines: [{ placementId: 'pl-a', amount: '5.00' }, { placementId: 'pl-b', amount: '7.125' }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'lines[1].amount', value: '7.125' });
    expect(res.body.error.message).toContain('lines[1].amount="7.125"');
    expect(await counts()).toEqual({ imports: 0, lines: 0, outbox: 0 });
    expect((await h.db.sql`select status from subsidy_reconcile_queue`)[0]).toEqual({ status: 'pending' });
  });

  it('a second import of the same source and period is a 409 naming the first, and writes nothing', async () => {
    await pending('pl-a', 2);
    const body = { source: 'county-a', period: '2026-10-01', lines: [{ placementId: 'pl-a', amount: '1' }] };
    const first = await call(h.app, 'POST', '/v1/subsidy-imports', { body });
    expect(first.status).toBe(201);
    const again = await call(h.app, 'POST', '/v1/subsidy-imports', { body: { ...body, period: '2026-10' } });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'subsidy_import_exists', source: 'county-a', period: '2026-10-01', importId: first.body.import.id });
    expect(await counts()).toMatchObject({ imports: 1, lines: 1 });
    expect((await h.db.sql`select count(*)::int as n from subsidy_reconcile_queue where status = 'pending'`)[0]!.n).toBe(1);
  });
});

describe('concurrent imports', () => {
  it('two imports racing for the same pending rows never match one row twice', async () => {
    await pending('pl-race', 3);
    const body = (source: string) => ({ source, period: '2026-09', lines: [{ placementId: 'pl-race', amount: '1' }, { placementId: 'pl-race', amount: '2' }] });
    const [a, b] = await Promise.all([call(h.app, 'POST', '/v1/subsidy-imports', { body: body('feed-a') }), call(h.app, 'POST', '/v1/subsidy-imports', { body: body('feed-b') })]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.import.matched + b.body.import.matched).toBe(3);
    const [q] = await h.db.sql<{ matched: number; pending: number; lines: number }[]>`
      select count(*) filter (where status = 'matched')::int as matched, count(*) filter (where status = 'pending')::int as pending,
             (select count(*)::int from subsidy_import_lines where matched) as lines
      from subsidy_reconcile_queue`;
    expect(q).toEqual({ matched: 3, pending: 0, lines: 3 });
  });
});

describe('POST /v1/admin/reconcile/settle', () => {
  it('needs the admin token', async () => {
    expect((await call(h.app, 'POST', '/v1/admin/reconcile/settle', { body: {} })).status).toBe(401);
  });

  it('settles matched rows and stages one subsidy.settled per row in the same transaction', async () => {
    await seedQueue(h.db.sql, { status: 'matched', count: 3, ageDays: 2, placement: 'pl-m' });
    await pending('pl-p');
    const res = await call(h.app, 'POST', '/v1/admin/reconcile/settle', { token: ADMIN_TOKEN, body: { limit: 2 } });
    expect(res.status).toBe(200);
    expect(res.body.settled).toBe(2);
    expect(res.body.rows.map((r: { status: string }) => r.status)).toEqual(['settled', 'settled']);
    const events = await h.db.sql<{ event_type: string; aggregate_id: string; payload: { queueId: string; amount: string; kind: string } }[]>`
      select event_type, aggregate_id, payload from event_outbox order by id`;
    expect(events.map((e) => [e.event_type, e.aggregate_id, e.payload.queueId, e.payload.amount])).toEqual(res.body.rows.map((r: { id: string }) => ['subsidy.settled', 'pl-m', r.id, '10.00']));
    // The settled rows' timestamps come from the same transaction as their events.
    const [same] = await h.db.sql<{ ok: boolean }[]>`
      select bool_and(q.settled_at = o.created_at) as ok
      from subsidy_reconcile_queue q join event_outbox o on o.payload ->> 'queueId' = q.id::text`;
    expect(same!.ok).toBe(true);
    const rest = await call(h.app, 'POST', '/v1/admin/reconcile/settle', { token: ADMIN_TOKEN });
    expect(rest.body.settled).toBe(1);
    expect((await call(h.app, 'POST', '/v1/admin/reconcile/settle', { token: ADMIN_TOKEN })).body.settled).toBe(0);
    expect(await counts()).toMatchObject({ outbox: 3 });
  });

  it('when staging the event fails, nothing is settled', async () => {
    await seedQueue(h.db.sql, { status: 'matched', count: 2, ageDays: 2, placement: 'pl-m' });
    await h.db.sql`
      create or replace function refuse_settled_events() returns trigger language plpgsql as $$
      begin raise exception 'outbox refuses %', new.event_type; end $$`;
    await h.db.sql`create trigger refuse_settled_events before insert on event_outbox for each row execute function refuse_settled_events()`;
    const res = await call(h.app, 'POST', '/v1/admin/reconcile/settle', { token: ADMIN_TOKEN, body: {} });
    expect(res.status).toBe(500);
    expect((await h.db.sql`select status, settled_at from subsidy_reconcile_queue`).map((r) => [r.status, r.settled_at])).toEqual([
      ['matched', null],
      ['matched', null],
    ]);
  });

  it('refuses a bad limit naming it', async () => {
    const res = await call(h.app, 'POST', '/v1/admin/reconcile/settle', { token: ADMIN_TOKEN, body: { limit: 1001 } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'limit', value: 1001 });
  });
});

describe('GET /v1/reconcile-queue', () => {
  it('lists rows oldest first, by status, bounded', async () => {
    await pending('pl-p', 3);
    await seedQueue(h.db.sql, { status: 'settled', count: 2, ageDays: 1 });
    const all = await call(h.app, 'GET', '/v1/reconcile-queue');
    expect(all.body.rows).toHaveLength(5);
    const some = await call(h.app, 'GET', '/v1/reconcile-queue?status=pending&limit=2');
    expect(some.body.rows.map((r: { placementId: string; status: string }) => [r.placementId, r.status])).toEqual([
      ['pl-p', 'pending'],
      ['pl-p', 'pending'],
    ]);
    expect(some.body.rows[0]).toMatchObject({ kind: 'placement_started', amount: null, settledAt: null, caseId: 'c-1' });
    expect((await call(h.app, 'GET', '/v1/reconcile-queue?status=settled')).body.rows.every((r: { settledAt: string | null }) => r.settledAt !== null)).toBe(true);
  });

  it.each([
    ['status=done', 'status', 'done'],
    ['limit=0', 'limit', '0'],
    ['limit=501', 'limit', '501'],
    ['order=id', 'order', 'id'],
  ])('refuses ?%s naming the parameter', async (query, field, value) => {
    const res = await call(h.app, 'GET', `/v1/reconcile-queue?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field, value });
  });
});

describe('POST /v1/admin/reconcile/sweep', () => {
  it('runs one sweep now with the configured window', async () => {
    await seedQueue(h.db.sql, { status: 'settled', count: 4, ageDays: 120 });
    await seedQueue(h.db.sql, { status: 'settled', count: 1, ageDays: 30 });
    const res = await call(h.app, 'POST', '/v1/admin/reconcile/sweep', { token: ADMIN_TOKEN });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'pruned', deleted: 4, batches: 1 });
    expect((await h.db.sql`select count(*)::int as n from subsidy_reconcile_queue`)[0]!.n).toBe(1);
  });
});
