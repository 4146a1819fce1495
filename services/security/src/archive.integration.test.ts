// Archive-then-prune of audit_log and dead_letter_audit: aged rows go to the object store, are
// deleted in the transaction that records them in the ledger and stages the announcement, and
// read back once each, equal to the originals.
import { readArchiveObject } from '@craig/retention';
import { archiveEngineOn, crashAfter, expectArchiveRunGuarded, expectBatchAnnouncements, expectLedger, expectNothingArchived, startTimerLoop } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, counterValue, HOT_WINDOW_DAYS, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { announceArchivedBatch, ARCHIVE_BATCH_EVENT, SECURITY_ARCHIVE_SPECS } from './archive-specs.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'security_arch' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate audit_log, dead_letter_audit, event_outbox`;
  await h.db.sql`alter table archive_ledger disable trigger user`;
  await h.db.sql`delete from archive_ledger`;
  await h.db.sql`alter table archive_ledger enable trigger user`;
});

// Rows as the consumers write them, with explicit past received_at (an INSERT may override the default).
async function seed(): Promise<void> {
  await h.db.sql`
    insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, headers, occurred_at, received_at)
    select gen_random_uuid(), 'case.opened', 'case', 'c-' || g, 'cases',
           jsonb_build_object('n', g, 'big', 9007199254740993 + g, 'text', E'line\\nü'), '{"trace":"x"}',
           now() - make_interval(days => d, secs => 5), now() - make_interval(days => d)
    from generate_series(1, 12) g, lateral (select case when g <= 9 then 100 + g * 30 else g end as d) ages`;
  await h.db.sql`
    insert into dead_letter_audit (consumer, message_id, event_id, routing_key, error, attempts, body, headers, dead_lettered_at, received_at)
    select 'cases.flaky', gen_random_uuid()::text, null, 'placement.started', 'boom', 2, 'raw ' || g, '{}',
           now() - make_interval(days => d), now() - make_interval(days => d)
    from generate_series(1, 3) g, lateral (select case when g <= 2 then 200 else 1 end as d) ages`;
}

const count = async (table: 'audit_log' | 'dead_letter_audit') => (await h.db.sql`select count(*)::int as n from ${h.db.sql(table)}`)[0]!.n as number;

describe('security archive', () => {
  it('archives aged rows, deletes them, keeps fresh ones hot, writes the ledger and announces each batch; the archive reads back once each', async () => {
    await seed();
    const originals = await h.db.sql<Record<string, string | null>[]>`
      select id::text, event_id::text, event_type, aggregate_type, aggregate_id, source, payload::text, headers::text,
             occurred_at::text, received_at::text
      from audit_log where received_at < now() - make_interval(days => ${HOT_WINDOW_DAYS}) order by audit_log.id`;
    expect(originals).toHaveLength(9);

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ status: 'completed', tables: [{ table: 'audit_log', rows: 9, batches: 1, outcome: 'drained' }, { table: 'dead_letter_audit', rows: 2, batches: 1, outcome: 'drained' }] });

    expect(await count('audit_log')).toBe(3);
    expect(await count('dead_letter_audit')).toBe(1);
    expect((await h.db.sql`select count(*)::int as n from audit_log where received_at < now() - interval '90 days'`)[0]!.n).toBe(0);

    const ledger = await expectLedger(h.db.sql, 'security', [['audit_log', 9], ['dead_letter_audit', 2]]);

    // One announcement per batch, staged in its transaction: the event id is the archive id.
    await expectBatchAnnouncements(h.db.sql, ARCHIVE_BATCH_EVENT, ledger);

    // Read back (digest and row count verified against the ledger): each row once, equal to the original.
    const archived = await readArchiveObject(h.store, ledger[0]!);
    expect(archived.map((r) => r.id)).toEqual(originals.map((r) => r.id));
    for (const [i, row] of archived.entries()) {
      const original = originals[i]!;
      expect({ ...row, payload: JSON.parse(row.payload!) as unknown, headers: JSON.parse(row.headers!) as unknown }).toEqual({
        ...original,
        payload: JSON.parse(original.payload!) as unknown,
        headers: JSON.parse(original.headers!) as unknown,
        occurred_at: expect.any(String),
        received_at: expect.any(String),
      });
      expect(new Date(row.received_at!).getTime()).toBe(new Date(original.received_at!).getTime());
    }
    // jsonb text byte for byte: integers beyond 2^53 survive.
    expect(archived.map((r) => r.payload)).toEqual(originals.map((r) => r.payload));
    expect(archived[0]!.payload).toContain('"big": 9007199254740994');
    expect(await counterValue(h.registry, 'archive_rows_total', { table: 'audit_log' })).toBeGreaterThanOrEqual(9);

    // A second cycle finds nothing more to do.
    const again = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(again.body.tables.map((t: { rows: number }) => t.rows)).toEqual([0, 0]);
  });

  it('a batch whose transaction rolls back after staging its announcement leaves no event, no ledger row, and the rows hot', async () => {
    await seed();
    const engine = archiveEngineOn(h, { service: 'security', specs: SECURITY_ARCHIVE_SPECS, hotWindowDays: HOT_WINDOW_DAYS, onBatchArchived: crashAfter(announceArchivedBatch) });
    const report = await engine.runCycle();
    expect(report.tables[0]).toMatchObject({ table: 'audit_log', rows: 0, outcome: 'failed' });
    await expectNothingArchived(h.db.sql);
    expect(await count('audit_log')).toBe(12);
  });

  it('the admin route needs the token, and answers 409 archive_lease_held while another archiver holds the lease', async () => {
    await seed();
    await expectArchiveRunGuarded(h, 'security');
    expect(await count('audit_log')).toBe(12);
  });

  it('the timer loop runs cycles until its signal aborts', async () => {
    await seed();
    const stop = await startTimerLoop(h.service.engine, h.registry);
    expect(await count('audit_log')).toBe(3);
    await stop();
  });
});
