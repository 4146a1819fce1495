// The devstack contribution: aged history the transport sweep has real work on (outbox and
// inbox), and traffic over the HTTP API.
import { migrationTemplate } from '@craig/db';
import { demoContext, expectTransportSweep, jsonStub, listenLocally } from '@craig/service-testkit';
import { testDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safetyHarness, type SafetyHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { SAFETY_MIGRATION_SETS } from './migrations.ts';

let h: SafetyHarness;
beforeAll(async () => {
  h = await safetyHarness();
});
afterAll(() => h.drop());

describe('safety demo', () => {
  it('seeds case refs, reports, their events and inbox records; the sweep prunes only what it may', async () => {
    const db = await testDatabase({ prefix: 'safety_t', template: migrationTemplate(SAFETY_MIGRATION_SETS), max: 1 });
    try {
      await demo.seedAgedHistory(db.sql, { rows: 30 });
      const [before] = await db.sql<Record<string, number>[]>`
        select (select count(*) from case_refs)::int as refs,
               (select count(*) from safety_reports)::int as reports,
               (select count(*) from event_outbox)::int as events,
               (select count(*) from event_outbox where published_at is null)::int as pending,
               (select count(*) from event_outbox where published_at is null and created_at < now() - interval '30 days')::int as aged_pending,
               (select count(*) from event_inbox where received_at < now() - interval '31 days')::int as aged_inbox`;
      expect(before).toMatchObject({ refs: 30, reports: 30, events: 30, pending: 5 });
      expect(before!.aged_pending).toBeGreaterThan(0);
      expect(before!.aged_inbox).toBeGreaterThan(0);
      await expectTransportSweep(db, 'safety', { agedInbox: before!.aged_inbox!, pending: 5 });
    } finally {
      await db.drop();
    }
  });

  it('tick files a report on an open case it has heard of, on some ticks only', async () => {
    const base = await listenLocally(h.app);
    const caseId = '22222222-2222-4222-8222-222222222222';
    await h.deliver('case.opened', caseId);
    // urlOf('cases') is a stand-in serving the open-case list: the safety API is what is under test.
    const cases = await jsonStub({ cases: [{ id: caseId }] });
    try {
      const context = (random: number) => demoContext({ urls: { safety: base, cases: cases.url }, random });
      await demo.tick!(context(0.9));
      const reportsAfterQuietTick = await h.db.sql`select 1 from safety_reports`;
      expect(reportsAfterQuietTick).toHaveLength(0);
      await demo.tick!(context(0.1));
      const [filed] = await h.db.sql`select count(*)::int as n, min(case_id::text) as case_id from safety_reports`;
      expect(filed).toEqual({ n: 1, case_id: caseId });
    } finally {
      await cases.close();
    }
  });
});
