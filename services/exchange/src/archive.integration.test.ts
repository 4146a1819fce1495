// Archive-then-prune of the SSA chain: handoffs → members → runs, FK order, NOT EXISTS guards,
// the runs' quiescence horizon, exact read-back, and no outbox announcement (ledger-only).
import { createArchiveEngine, readArchiveObject, readLedger } from '@craig/retention';
import { expectArchiveRunGuarded, startTimerLoop } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, counterValue, HOT_WINDOW_DAYS, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { EXCHANGE_ARCHIVE_SPECS } from './archive-specs.ts';
import { ScreeningPastFreshnessError } from './errors.ts';
import { invalidateScreening } from './screenings.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_arch' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate ssa_transport_handoffs, ssa_screening_members, ssa_screening_runs, event_outbox`;
  await h.db.sql`alter table archive_ledger disable trigger user`;
  await h.db.sql`delete from archive_ledger`;
  await h.db.sql`alter table archive_ledger enable trigger user`;
});

// Rows as the consumer and the worker write them, with explicit past timestamps.
async function seed(): Promise<void> {
  await h.db.sql`
    insert into ssa_screening_runs (id, case_id, status, as_of, created_at, completed_at) values
      (1, 'c-1', 'completed', current_date - 800, now() - interval '800 days', now() - interval '800 days'),  -- whole chain goes
      (2, 'c-2', 'completed', current_date - 800, now() - interval '800 days', now() - interval '800 days'),  -- handoff is hot
      (3, 'c-3', 'completed', current_date - interval '6 months', now() - interval '800 days', now() - interval '800 days'), -- inside the freshness horizon
      (4, 'c-4', 'running', current_date - 800, now() - interval '800 days', null),                          -- not terminal
      (5, 'c-5', 'completed', current_date - 400, now() - interval '100 days', now() - interval '100 days'), -- inside the hot window
      (6, 'c-6', 'failed', current_date - 800, now() - interval '800 days', now() - interval '800 days')     -- terminal, but not completed`;
  await h.db.sql`
    insert into ssa_screening_members (id, run_id, person_ref, status, created_at, completed_at) values
      (11, 1, 'p-11', 'matched', now() - interval '800 days', now() - interval '800 days'),
      (12, 1, 'p-12', 'cleared', now() - interval '800 days', now() - interval '800 days'),
      (21, 2, 'p-21', 'matched', now() - interval '800 days', now() - interval '100 days'),
      (31, 3, 'p-31', 'cleared', now() - interval '800 days', now() - interval '800 days'),
      (41, 4, 'p-41', 'pending', now() - interval '800 days', null),
      (51, 5, 'p-51', 'cleared', now() - interval '100 days', now() - interval '100 days'),
      (61, 6, 'p-61!error', 'error', now() - interval '800 days', now() - interval '800 days')`;
  await h.db.sql`
    insert into ssa_transport_handoffs (id, member_id, payload, created_at) values
      (101, 11, '{"runId": "1", "personRef": "p-11", "big": 9007199254740993}', now() - interval '800 days'),
      (102, 21, '{"runId": "2", "personRef": "p-21"}', now() - interval '100 days')`;
}

const ids = async (table: 'ssa_transport_handoffs' | 'ssa_screening_members' | 'ssa_screening_runs') =>
  (await h.db.sql<{ id: string }[]>`select id from ${h.db.sql(table)} order by id`).map((r) => Number(r.id));

describe('exchange archive', () => {
  it('archives handoffs, then members, then runs; a parent with a hot dependent and a run inside the freshness horizon stay hot; no event is staged', async () => {
    await seed();
    const originals = {
      handoffs: await h.db.sql<Record<string, string | null>[]>`select id::text, member_id::text, payload::text, created_at::text from ssa_transport_handoffs where id = 101`,
      members: await h.db.sql<Record<string, string | null>[]>`
        select id::text, run_id::text, person_ref, status, created_at::text, completed_at::text from ssa_screening_members where id in (11, 12, 31, 61) order by ssa_screening_members.id`,
      runs: await h.db.sql<Record<string, string | null>[]>`
        select id::text, case_id, status, as_of::text, created_at::text, completed_at::text, invalidated_at::text from ssa_screening_runs where id = 1`,
    };

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      status: 'completed',
      tables: [
        { table: 'ssa_transport_handoffs', rows: 1, batches: 1, outcome: 'drained' },
        { table: 'ssa_screening_members', rows: 4, batches: 1, outcome: 'drained' },
        { table: 'ssa_screening_runs', rows: 1, batches: 1, outcome: 'drained' },
      ],
    });

    expect(await ids('ssa_transport_handoffs')).toEqual([102]);
    // 21 keeps its hot handoff; 41 is pending; 51 is inside the hot window.
    expect(await ids('ssa_screening_members')).toEqual([21, 41, 51]);
    // 2: a hot dependent; 3: inside the freshness horizon (its member went); 4: running;
    // 5: inside the hot window; 6: failed is not the runs' fixpoint.
    expect(await ids('ssa_screening_runs')).toEqual([2, 3, 4, 5, 6]);

    // Ledger-only: children committed before parents, and not one outbox row.
    const ledgerRows = await readLedger(h.db.sql);
    const ledger = ['ssa_transport_handoffs', 'ssa_screening_members', 'ssa_screening_runs'].map((t) => ledgerRows.find((e) => e.table === t)!);
    expect(ledgerRows).toHaveLength(3);
    expect(ledger.map((e) => [e.table, e.rowCount])).toEqual([
      ['ssa_transport_handoffs', 1],
      ['ssa_screening_members', 4],
      ['ssa_screening_runs', 1],
    ]);
    const order = (await h.db.sql<{ table_name: string }[]>`select table_name from archive_ledger order by created_at, archive_id`).map((r) => r.table_name);
    expect(order).toEqual(['ssa_transport_handoffs', 'ssa_screening_members', 'ssa_screening_runs']);
    expect(ledger[0]!.key).toMatch(/^archive\/exchange\/ssa_transport_handoffs\/\d{4}\/\d{2}\/[0-9a-f-]{36}\.ndjson\.gz$/);
    expect((await h.db.sql`select count(*)::int as n from event_outbox`)[0]!.n).toBe(0);

    // Read back (digest and count verified against the ledger): each row once, equal to the original.
    const [handoffs, members, runs] = await Promise.all(ledger.map((e) => readArchiveObject(h.store, e)));
    const sameInstant = (a: string | null | undefined, b: string | null | undefined) => (a == null ? b == null : new Date(a).getTime() === new Date(b!).getTime());
    expect(handoffs!.map((r) => ({ id: r.id, member_id: r.member_id, payload: r.payload }))).toEqual(originals.handoffs.map((r) => ({ id: r.id, member_id: r.member_id, payload: r.payload })));
    expect(handoffs![0]!.payload).toContain('9007199254740993');
    expect(members!.map((r) => [r.id, r.run_id, r.person_ref, r.status])).toEqual(originals.members.map((r) => [r.id, r.run_id, r.person_ref, r.status]));
    members!.forEach((r, i) => {
      expect(sameInstant(r.created_at, originals.members[i]!.created_at)).toBe(true);
      expect(sameInstant(r.completed_at, originals.members[i]!.completed_at)).toBe(true);
    });
    expect(runs!.map((r) => [r.id, r.case_id, r.status, r.as_of, r.invalidated_at])).toEqual(originals.runs.map((r) => [r.id, r.case_id, r.status, r.as_of, r.invalidated_at]));
    expect(sameInstant(runs![0]!.created_at, originals.runs[0]!.created_at)).toBe(true);

    // An archived run is gone from the API; the writer refuses nothing it cannot see.
    expect((await call(h.app, 'GET', '/v1/screenings/1')).status).toBe(404);
    expect((await call(h.app, 'POST', '/v1/screenings/1/invalidate')).body.error).toMatchObject({ code: 'screening_not_found', screeningId: '1' });

    // Once the hot handoff ages out, the next cycle takes it, then its member, then its run.
    await h.db.sql`update ssa_transport_handoffs set created_at = now() - interval '400 days' where id = 102`;
    const again = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(again.body.tables.map((t: { rows: number }) => t.rows)).toEqual([1, 1, 1]);
    expect(await ids('ssa_screening_runs')).toEqual([3, 4, 5, 6]);
    expect(await counterValue(h.registry, 'archive_rows_total', { table: 'ssa_screening_members' })).toBe(5);
  });

  it('precondition 4: while the runs batch is in flight, the invalidation is refused by its WHERE without waiting on the batch, and the archive holds the run as it was', async () => {
    await seed();
    const refusals: unknown[] = [];
    // A test engine over the service's own specs, whose hook runs inside the runs batch's
    // transaction after its delete: run 1 is deleted but not committed, its row locked.
    const engine = createArchiveEngine({
      service: 'exchange',
      databaseUrl: h.db.url,
      store: h.store,
      specs: EXCHANGE_ARCHIVE_SPECS,
      hotWindowDays: HOT_WINDOW_DAYS,
      prefix: 'archive',
      onBatchArchived: async (_tx, batch) => {
        if (batch.table !== 'ssa_screening_runs') return;
        // On another connection: an app-side check-then-write UPDATE would block here on the
        // locked row; the in-WHERE refusal does not match it, so it returns at once.
        refusals.push(await invalidateScreening(h.sql, '1').catch((e: unknown) => e));
        // A run inside the freshness horizon is still the writer's to stamp.
        refusals.push((await invalidateScreening(h.sql, '3')).invalidatedAt);
      },
    });
    const report = await engine.runCycle();
    expect(report.tables.map((t) => [t.table, t.rows])).toEqual([
      ['ssa_transport_handoffs', 1],
      ['ssa_screening_members', 4],
      ['ssa_screening_runs', 1],
    ]);
    expect(refusals[0]).toBeInstanceOf(ScreeningPastFreshnessError);
    expect(refusals[0]).toMatchObject({ code: 'screening_past_freshness', screeningId: '1' });
    expect(refusals[1]).toEqual(expect.stringMatching(/Z$/));
    const entry = (await readLedger(h.db.sql)).find((e) => e.table === 'ssa_screening_runs')!;
    const [archived] = await readArchiveObject(h.store, entry);
    expect(archived).toMatchObject({ id: '1', status: 'completed', invalidated_at: null });
    expect(await ids('ssa_screening_runs')).toEqual([2, 3, 4, 5, 6]);
  });

  it('the admin route needs the token, and answers 409 archive_lease_held while another archiver holds the lease', async () => {
    await seed();
    await expectArchiveRunGuarded(h, 'exchange');
    expect(await ids('ssa_transport_handoffs')).toEqual([101, 102]);
  });

  it('the timer loop runs cycles until its signal aborts', async () => {
    await seed();
    const stop = await startTimerLoop(h.service.engine, h.registry);
    expect(await ids('ssa_screening_runs')).toEqual([2, 3, 4, 5, 6]);
    await stop();
  });

  it('the specs pass the engine check against the migrated schema (every foreign key guarded)', async () => {
    await expect(h.service.engine.check()).resolves.toBeUndefined();
  });
});
