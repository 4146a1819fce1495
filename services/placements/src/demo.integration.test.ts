// The devstack contribution: aged history the transport sweep has real work on (outbox and
// inbox), and traffic over the HTTP API.
import { migrationTemplate } from '@craig/db';
import { demoContext, expectTransportSweep, jsonStub, listenLocally } from '@craig/service-testkit';
import { testDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placementsHarness, type PlacementsHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { PLACEMENTS_MIGRATION_SETS } from './migrations.ts';

let h: PlacementsHarness;
beforeAll(async () => {
  h = await placementsHarness();
});
afterAll(() => h.drop());

describe('placements demo', () => {
  it('seeds case refs, placements, their events and inbox records; the sweep prunes only what it may', async () => {
    const db = await testDatabase({ prefix: 'placements_t', template: migrationTemplate(PLACEMENTS_MIGRATION_SETS), max: 1 });
    try {
      await demo.seedAgedHistory(db.sql, { rows: 30 });
      const [before] = await db.sql<Record<string, number>[]>`
        select (select count(*) from case_refs)::int as refs,
               (select count(*) from placements)::int as placements,
               (select count(*) from placements p join case_refs r using (case_id) where r.status = 'closed' and p.end_reason is distinct from 'case_closed')::int as open_on_closed,
               (select count(*) from event_outbox where published_at is null)::int as pending,
               (select count(*) from event_inbox where received_at < now() - interval '31 days')::int as aged_inbox`;
      expect(before).toMatchObject({ refs: 30, placements: 30, open_on_closed: 0, pending: 5 });
      expect(before!.aged_inbox).toBeGreaterThan(0);
      await expectTransportSweep(db, 'placements', { agedInbox: before!.aged_inbox!, pending: 5 });
    } finally {
      await db.drop();
    }
  });

  it('tick places an open case it has heard of and sometimes ends an active placement', async () => {
    const base = await listenLocally(h.app);
    const caseId = '11111111-1111-4111-8111-111111111111';
    await h.deliver('case.opened', caseId);
    // urlOf('cases') is a stand-in serving the open-case list: the placements API is what is under test.
    const cases = await jsonStub({ cases: [{ id: caseId }] });
    try {
      const context = (random: number) => demoContext({ urls: { placements: base, cases: cases.url }, random });
      await demo.tick!(context(0.1));
      const [placed] = await h.db.sql`select count(*)::int as n, count(ended_at)::int as ended from placements where case_id = ${caseId}`;
      expect(placed).toEqual({ n: 1, ended: 0 });
      await demo.tick!(context(0.9));
      const [later] = await h.db.sql`select count(*)::int as n, count(ended_at)::int as ended from placements where case_id = ${caseId}`;
      expect(later).toEqual({ n: 2, ended: 1 });
    } finally {
      await cases.close();
    }
  });
});
