// The devstack's aged history: rows the service's writers could have left, with work for the archive.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { evaluate, parseRules } from './rule-language.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'rules_demo' });
});
afterAll(() => h.drop());

describe('rules demo', () => {
  it('seeds aged evaluations past the hot window and fresh ones, each as its snapshot decides; one archive cycle takes exactly the aged ones', async () => {
    await demo.seedAgedHistory(h.db.sql, { rows: 200 });
    const [ages] = await h.db.sql<{ aged: number; fresh: number; inbox: number; oldest_days: number; newest_aged_days: number }[]>`
      select (select count(*)::int from rule_evaluations where evaluated_at < now() - interval '100 days' + interval '1 minute') as aged,
             (select count(*)::int from rule_evaluations where evaluated_at > now() - interval '31 days') as fresh,
             (select count(*)::int from event_inbox i join rule_evaluations e using (event_id) where i.received_at = e.evaluated_at and i.consumer = 'rules.evaluate') as inbox,
             (select extract(day from now() - min(evaluated_at))::int from rule_evaluations) as oldest_days,
             (select min(extract(day from now() - evaluated_at))::int from rule_evaluations where evaluated_at < now() - interval '90 days') as newest_aged_days`;
    expect(ages).toEqual({ aged: 200, fresh: 20, inbox: 220, oldest_days: 400, newest_aged_days: 100 });

    // Every evaluation is what the consumer would have written: the outcome its snapshot gives
    // its input, by a snapshot that existed at the time.
    const rows = await h.db.sql<{ event_type: string; input: unknown; outcome: string; matched_rules: string[]; rules: unknown; before: boolean }[]>`
      select e.event_type, e.input, e.outcome, e.matched_rules, s.rules, s.created_at <= e.evaluated_at as before
      from rule_evaluations e join rule_set_snapshots s on s.id = e.snapshot_id`;
    for (const row of rows) {
      expect(evaluate(parseRules(row.rules), { eventType: row.event_type, payload: row.input })).toEqual({ outcome: row.outcome, matchedRules: row.matched_rules });
      expect(row.before).toBe(true);
    }
    expect(new Set(rows.map((r) => r.outcome))).toEqual(new Set(['pass', 'flag', 'block']));
    const [outbox] = await h.db.sql`
      select count(*) filter (where event_type = 'rule.evaluated')::int as evaluated, count(*) filter (where event_type = 'rules.archive.batch')::int as batches,
             bool_and(published_at >= created_at) as ok from event_outbox`;
    expect(outbox).toEqual({ evaluated: 220, batches: 2, ok: true });
    const snapshots = await h.db.sql`select version, created_by from rule_set_snapshots where rule_set = 'default' order by version`;
    expect(snapshots).toEqual([{ version: 1, created_by: 'migration' }, { version: 2, created_by: 'demo-admin' }]);
    const [preview] = await h.db.sql`select summary -> 'evaluated' as evaluated, (summary ->> 'changed')::int > 0 as changed from rule_set_promotion_previews`;
    expect(preview).toEqual({ evaluated: 220, changed: true });
    for (const table of demo.tables) expect((await h.db.sql`select to_regclass(${table}) is not null as exists`)[0]).toEqual({ exists: true });

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.body.tables.map((t: { table: string; rows: number }) => [t.table, t.rows])).toEqual([['rule_evaluations', 200]]);
    expect((await h.db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n).toBe(20);
  });

  it('tick reads evaluations over HTTP, every 30th tick posts a candidate snapshot and previews it, and fails loudly on an error answer', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as { port: number };
    const context = (tick: number, url: string | undefined) => ({ urlOf: (s: string) => (s === 'rules' ? url : undefined), adminToken: ADMIN_TOKEN, signal: new AbortController().signal, random: () => 0.5, tick });
    await demo.tick!(context(0, `http://127.0.0.1:${port}`));
    await demo.tick!(context(1, `http://127.0.0.1:${port}`));
    const candidates = await h.db.sql`
      select s.version, s.created_by, s.rules -> 0 -> 'when' -> 'value' as value, count(p.id)::int as previews
      from rule_set_snapshots s left join rule_set_promotion_previews p on p.snapshot_id = s.id
      where s.rule_set = 'demo-candidate' group by s.id order by s.version`;
    expect(candidates).toEqual([{ version: 1, created_by: 'devstack', value: ['high', 'critical'], previews: 1 }]);
    // Not running: nothing to do. Answering an error: the devstack logs the throw.
    await demo.tick!(context(2, undefined));
    await expect(demo.tick!(context(3, `http://127.0.0.1:${port}/nowhere`))).rejects.toThrow('GET /nowhere/v1/evaluations answered 404');
  });
});
