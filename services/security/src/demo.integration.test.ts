// The devstack's aged history: rows the service's writers could have left, with work for the archive.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { demo } from './demo.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'security_demo' });
});
afterAll(() => h.drop());

describe('security demo', () => {
  it('seeds aged audit history past the hot window and fresh rows that stay hot; one archive cycle takes exactly the aged ones', async () => {
    await demo.seedAgedHistory(h.db.sql, { rows: 200 });
    const [ages] = await h.db.sql<{ aged: number; fresh: number; letters_aged: number; letters_fresh: number; inbox: number; oldest_days: number }[]>`
      select (select count(*)::int from audit_log where received_at < now() - interval '100 days' + interval '1 minute') as aged,
             (select count(*)::int from audit_log where received_at > now() - interval '31 days') as fresh,
             (select count(*)::int from dead_letter_audit where received_at < now() - interval '90 days') as letters_aged,
             (select count(*)::int from dead_letter_audit where received_at > now() - interval '31 days') as letters_fresh,
             (select count(*)::int from event_inbox i join audit_log a using (event_id) where i.received_at = a.received_at) as inbox,
             (select extract(day from now() - min(received_at))::int from audit_log) as oldest_days`;
    expect(ages).toEqual({ aged: 200, fresh: 20, letters_aged: 4, letters_fresh: 4, inbox: 220, oldest_days: 400 });
    const [outbox] = await h.db.sql`select count(*)::int as n, bool_and(published_at >= created_at) as ok from event_outbox`;
    expect(outbox).toEqual({ n: 2, ok: true });
    for (const table of demo.tables) expect((await h.db.sql`select to_regclass(${table}) is not null as exists`)[0]).toEqual({ exists: true });

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.body.tables.map((t: { table: string; rows: number }) => [t.table, t.rows])).toEqual([['audit_log', 200], ['dead_letter_audit', 4]]);
    expect((await h.db.sql`select count(*)::int as n from audit_log`)[0]!.n).toBe(20);
  });

  it('tick reads the audit API over HTTP and fails loudly on an error answer', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as { port: number };
    const context = (tick: number, url: string | undefined) => ({ urlOf: (s: string) => (s === 'security' ? url : undefined), adminToken: ADMIN_TOKEN, signal: new AbortController().signal, random: Math.random, tick });
    await demo.tick!(context(0, `http://127.0.0.1:${port}`));
    // Not running: nothing to do. Answering an error: the devstack logs the throw.
    await demo.tick!(context(1, undefined));
    await expect(demo.tick!(context(2, `http://127.0.0.1:${port}/nowhere`))).rejects.toThrow('GET /v1/audit answered 404');
  });
});
