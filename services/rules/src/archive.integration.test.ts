// Archive-then-prune of rule_evaluations: aged rows go to the object store, are deleted in the
// transaction that records them in the ledger and stages the announcement, and read back once
// each, equal to the originals; snapshots and previews stay hot, untouched.
import { readArchiveObject } from '@craig/retention';
import { archiveEngineOn, crashAfter, expectArchiveRunGuarded, expectBatchAnnouncements, expectLedger, expectNothingArchived, startTimerLoop } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, counterValue, HOT_WINDOW_DAYS, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { announceArchivedBatch, ARCHIVE_BATCH_EVENT, RULES_ARCHIVE_SPECS } from './archive-specs.ts';

let h: ServiceHarness;
let v2: string;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'rules_arch' });
  // A second snapshot and a preview: neither may be touched by a cycle.
  v2 = (await call(h.app, 'POST', '/v1/rule-sets/default/snapshots', { token: ADMIN_TOKEN, body: { rules: [{ name: 'any-case', when: { eventType: 'case.*', field: 'caseId', op: 'exists', value: true }, outcome: 'flag' }] } })).body.snapshot.id;
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate rule_evaluations, event_outbox`;
  await h.db.sql`alter table archive_ledger disable trigger user`;
  await h.db.sql`delete from archive_ledger`;
  await h.db.sql`alter table archive_ledger enable trigger user`;
});

// Rows as the consumer writes them, with explicit past evaluated_at (an INSERT may override the
// default): 9 aged past the 90-day window (half of them referencing version 1), 3 fresh.
async function seed(): Promise<void> {
  await h.db.sql`
    insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, matched_rules, input, evaluated_at)
    select gen_random_uuid(), 'case.opened',
           case when g % 2 = 0 then ${v2}::bigint else (select id from rule_set_snapshots where rule_set = 'default' and version = 1) end,
           case when g % 3 = 0 then 'flag' else 'pass' end, case when g % 3 = 0 then array['any-case', 'x'] else '{}' end,
           jsonb_build_object('n', g, 'big', 9007199254740993 + g, 'text', E'line\\nü'), now() - make_interval(days => d)
    from generate_series(1, 12) g, lateral (select case when g <= 9 then 100 + g * 30 else g end as d) ages`;
}

const count = async () => (await h.db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n as number;
const hotState = () => h.db.sql`
  select (select jsonb_agg(s order by s.id)::text from rule_set_snapshots s) as snapshots,
         (select jsonb_agg(p order by p.id)::text from rule_set_promotion_previews p) as previews`;

describe('rules archive', () => {
  it('archives aged evaluations, deletes them, keeps fresh ones, snapshots and previews hot, writes the ledger and announces each batch; the archive reads back once each', async () => {
    await seed();
    expect((await call(h.app, 'POST', '/v1/rule-sets/default/previews', { token: ADMIN_TOKEN, body: { snapshotId: v2 } })).status).toBe(201);
    const before = await hotState();
    const originals = await h.db.sql<Record<string, string | null>[]>`
      select id::text, event_id::text, event_type, snapshot_id::text, outcome, matched_rules::text, input::text, evaluated_at::text
      from rule_evaluations where evaluated_at < now() - make_interval(days => ${HOT_WINDOW_DAYS}) order by rule_evaluations.id`;
    expect(originals).toHaveLength(9);

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', tables: [{ table: 'rule_evaluations', rows: 9, batches: 1, outcome: 'drained' }] });

    expect(await count()).toBe(3);
    expect((await h.db.sql`select count(*)::int as n from rule_evaluations where evaluated_at < now() - interval '90 days'`)[0]!.n).toBe(0);
    expect(await hotState()).toEqual(before);
    expect(JSON.parse(before[0]!.previews as string)).toHaveLength(1);

    const ledger = await expectLedger(h.db.sql, 'rules', [['rule_evaluations', 9]]);

    // One announcement per batch, staged in its transaction: the event id is the archive id.
    await expectBatchAnnouncements(h.db.sql, ARCHIVE_BATCH_EVENT, ledger);

    // Read back (digest and row count verified against the ledger): each row once, equal to the original.
    const archived = await readArchiveObject(h.store, ledger[0]!);
    expect(archived.map((r) => r.id)).toEqual(originals.map((r) => r.id));
    for (const [i, row] of archived.entries()) {
      const original = originals[i]!;
      expect({ ...row, input: JSON.parse(row.input!) as unknown, evaluated_at: new Date(row.evaluated_at!).getTime() }).toEqual({
        ...original,
        input: JSON.parse(original.input!) as unknown,
        evaluated_at: new Date(original.evaluated_at!).getTime(),
      });
    }
    // jsonb text byte for byte: integers beyond 2^53 survive; the text[] as PostgreSQL writes it.
    expect(archived.map((r) => r.input)).toEqual(originals.map((r) => r.input));
    expect(archived[0]!.input).toContain('"big": 9007199254740994');
    expect(archived.find((r) => r.outcome === 'flag')!.matched_rules).toBe('{any-case,x}');
    expect(await counterValue(h.registry, 'archive_rows_total', { table: 'rule_evaluations' })).toBeGreaterThanOrEqual(9);

    // A second cycle finds nothing more to do, and still leaves the hot tables alone.
    const again = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(again.body.tables.map((t: { rows: number }) => t.rows)).toEqual([0]);
    expect(await hotState()).toEqual(before);
  });

  it('a batch whose transaction rolls back after staging its announcement leaves no event, no ledger row, and the rows hot', async () => {
    await seed();
    const engine = archiveEngineOn(h, { service: 'rules', specs: RULES_ARCHIVE_SPECS, hotWindowDays: HOT_WINDOW_DAYS, onBatchArchived: crashAfter(announceArchivedBatch) });
    const report = await engine.runCycle();
    expect(report.tables[0]).toMatchObject({ table: 'rule_evaluations', rows: 0, outcome: 'failed' });
    await expectNothingArchived(h.db.sql);
    expect(await count()).toBe(12);
  });

  it('the admin route needs the token, and answers 409 archive_lease_held while another archiver holds the lease', async () => {
    await seed();
    await expectArchiveRunGuarded(h, 'rules');
    expect(await count()).toBe(12);
  });

  it('the timer loop runs cycles until its signal aborts', async () => {
    await seed();
    const stop = await startTimerLoop(h.service.engine, h.registry);
    expect(await count()).toBe(3);
    await stop();
  });

  it('the engine accepts the schema: the specs match it and nothing references rule_evaluations', async () => {
    await expect(h.service.engine.check()).resolves.toBeUndefined();
    const referencing = await h.db.sql`select conrelid::regclass::text as t from pg_constraint where contype = 'f' and confrelid = 'rule_evaluations'::regclass`;
    expect(referencing).toEqual([]);
  });
});
