// The devstack contribution: aged history the transport sweep has real work on, and traffic
// over the HTTP API.
import { migrationTemplate } from '@craig/db';
import { pruneTransportTables } from '@craig/mq';
import { testDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, casesHarness, type CasesHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { CASES_MIGRATION_SETS } from './migrations.ts';

let h: CasesHarness;
beforeAll(async () => {
  h = await casesHarness();
});
afterAll(() => h.drop());

describe('cases demo', () => {
  it('seeds aged cases with their events; the sweep prunes the published ones and keeps the pending', async () => {
    const db = await testDatabase({ prefix: 'cases_t', template: migrationTemplate(CASES_MIGRATION_SETS), max: 1 });
    try {
      await demo.seedAgedHistory(db.sql, { rows: 30 });
      const [before] = await db.sql<{ cases: number; closed: number; published: number; pending: number; aged_pending: number }[]>`
        select (select count(*) from cases)::int as cases,
               (select count(*) from cases where closed_at is not null)::int as closed,
               (select count(*) from event_outbox where published_at is not null)::int as published,
               (select count(*) from event_outbox where published_at is null)::int as pending,
               (select count(*) from event_outbox where published_at is null and created_at < now() - interval '30 days')::int as aged_pending`;
      expect(before).toMatchObject({ cases: 30, closed: 20, pending: 5 });
      expect(before!.published + before!.pending).toBe(50);
      expect(before!.aged_pending).toBeGreaterThan(0);
      // Every event names a seeded case.
      const [orphans] = await db.sql`select count(*)::int as n from event_outbox o where not exists (select 1 from cases c where c.id::text = o.aggregate_id)`;
      expect(orphans!.n).toBe(0);

      const result = await pruneTransportTables({ databaseUrl: db.url, service: 'cases', retention: { outboxDays: 30, inboxDays: 31 }, registry: new Registry() });
      expect(result.outboxDeleted).toBeGreaterThan(0);
      const [after] = await db.sql<{ pending: number; aged_published: number }[]>`
        select (select count(*) from event_outbox where published_at is null)::int as pending,
               (select count(*) from event_outbox where published_at is not null and created_at < now() - interval '30 days')::int as aged_published`;
      expect(after).toEqual({ pending: 5, aged_published: 0 });
    } finally {
      await db.drop();
    }
  });

  it('tick opens a case over HTTP and, past the working set, closes the 20th newest open one', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const address = h.app.server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const controller = new AbortController();
    const context = (tick: number, random: number) => ({ urlOf: (s: string) => (s === 'cases' ? base : undefined), adminToken: ADMIN_TOKEN, signal: controller.signal, random: () => random, tick });
    for (let tick = 0; tick < 21; tick += 1) await demo.tick!(context(tick, 0.1));
    const [opened] = await h.db.sql`select count(*)::int as n, count(closed_at)::int as closed from cases`;
    expect(opened).toEqual({ n: 21, closed: 0 });
    await demo.tick!(context(21, 0.9));
    const [later] = await h.db.sql`select count(*)::int as n, count(closed_at)::int as closed from cases`;
    expect(later).toEqual({ n: 22, closed: 1 });
    const [oldest] = await h.db.sql`select subject from cases where closed_at is not null`;
    expect(oldest!.subject).toBe('demo case 2');
    await demo.tick!({ ...context(22, 0.9), urlOf: () => undefined });
    expect(demo.tables).toContain('cases');
  });
});
