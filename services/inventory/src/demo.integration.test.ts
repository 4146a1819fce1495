// The devstack demo against a real database and a real listening service: the seeded history is
// what the sweep expects (aged rows go, pending/parked/recent rows stay) and the traffic drives a
// sync that the cleanup runner completes.
import type { AddressInfo } from 'node:net';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { createInventoryDemo, demo, seedInventoryHistory } from './demo.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness();
});
afterAll(() => h.drop());

async function outboxCounts() {
  const [row] = await h.admin<{ aged_published: number; recent_published: number; pending: number; parked: number; aged_inbox: number; recent_inbox: number }[]>`
    select
      (select count(*)::int from event_outbox where published_at is not null and created_at < now() - interval '30 days') as aged_published,
      (select count(*)::int from event_outbox where published_at is not null and created_at >= now() - interval '30 days') as recent_published,
      (select count(*)::int from event_outbox where published_at is null and parked_at is null) as pending,
      (select count(*)::int from event_outbox where parked_at is not null) as parked,
      (select count(*)::int from event_inbox where received_at < now() - interval '31 days') as aged_inbox,
      (select count(*)::int from event_inbox where received_at >= now() - interval '31 days') as recent_inbox`;
  return row!;
}

describe('inventory devstack demo', () => {
  it('names the tables it shows, all of which exist', async () => {
    for (const table of demo.tables) {
      const [row] = await h.admin`select to_regclass(${table}) is not null as present`;
      expect(row, table).toEqual({ present: true });
    }
  });

  it('seeds aged history that one prune cycle removes, keeping pending, parked and recent rows', async () => {
    await seedInventoryHistory(h.admin, { rows: 2000 });
    const before = await outboxCounts();
    expect(before).toEqual({ aged_published: 1200, recent_published: 100, pending: 10, parked: 3, aged_inbox: 600, recent_inbox: 100 });
    const [graph] = await h.admin`select (select count(*)::int from servers) as servers, (select count(*)::int from libraries) as libraries, (select count(*)::int from items) as items`;
    expect(graph).toEqual({ servers: 1, libraries: 3, items: 100 });

    const cycle = await h.service.outbox.pruneExpired();
    expect(cycle.tables.map((t) => [t.table, t.status, t.deleted])).toEqual([
      ['event_outbox', 'pruned', 1200],
      ['event_inbox', 'pruned', 600],
    ]);
    expect(await outboxCounts()).toEqual({ aged_published: 0, recent_published: 100, pending: 10, parked: 3, aged_inbox: 0, recent_inbox: 100 });
  });

  it('drives the HTTP API until the cleanup runner completes a sync job that pruned the unseen items', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (h.app.server.address() as AddressInfo).port;
    h.service.runner.start();
    const traffic = createInventoryDemo({ itemsPerTick: 60, firstSyncTick: 2, syncEveryTicks: 1000 });
    const controller = new AbortController();
    let seed = 7;
    const context = (tick: number) => ({
      urlOf: (service: string) => (service === 'inventory' ? `http://127.0.0.1:${port}` : undefined),
      adminToken: ADMIN_TOKEN,
      signal: controller.signal,
      random: () => ((seed = (seed * 48271) % 2147483647) / 2147483647),
      tick,
    });
    for (let tick = 0; tick <= 2; tick++) await traffic.tick!(context(tick));
    // Registration (tick 0), two pages of 60 (ticks 1, 2), then the sync sealed at tick 2.
    const [job] = await h.admin<{ id: string; state: string; expected_unique_count: number }[]>`
      select id::text, state, expected_unique_count from cleanup_jobs where kind = 'prune-library'`;
    expect(job).toBeDefined();
    expect(['deleting', 'completed']).toContain(job!.state);
    const seen = job!.expected_unique_count;
    expect(seen).toBeGreaterThan(20);
    expect(seen).toBeLessThan(100);
    await eventually(async () => {
      const [row] = await h.admin`select state, deleted::int from cleanup_jobs where id = ${job!.id}`;
      expect(row).toEqual({ state: 'completed', deleted: 120 - seen });
    }, { timeoutMs: 20_000 });
    const [left] = await h.admin`select count(*)::int as n from items i join libraries l on l.id = i.library_id where l.external_id = 'demo-library'`;
    expect(left).toEqual({ n: seen });
    // Once the job is done the library is open again: the next tick adds a page.
    await traffic.tick!(context(3));
    const [after] = await h.admin`select count(*)::int as n from items i join libraries l on l.id = i.library_id where l.external_id = 'demo-library'`;
    expect(after).toEqual({ n: seen + 60 });
    controller.abort();
  });
});
