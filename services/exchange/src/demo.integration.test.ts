// The devstack's aged history: rows the service's writers could have left, with work for the
// archive and the send-job sweep.
import { retentionOverrun } from '@craig/mq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { demo } from './demo.ts';
import { sendJobRetentionSpec, sweepSendJobs } from './send-job-sweep.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_demo' });
});
afterAll(() => h.drop());

describe('exchange demo', () => {
  it('seeds archivable chains, chains held hot by a late handoff, fresh ones and sweepable jobs; one archive cycle and one sweep take exactly the aged ones', async () => {
    // A live chain the running worker already handed off (the devstack seeds while the service
    // runs): seeding must neither collide with it nor touch it.
    await h.db.sql`
      with r as (insert into ssa_screening_runs (case_id, status, as_of) values ('live-case', 'running', current_date) returning id),
           m as (insert into ssa_screening_members (run_id, person_ref, status, completed_at) select id, 'live-case:child', 'matched', now() from r returning id)
      insert into ssa_transport_handoffs (member_id, payload) select id, '{}'::jsonb from m`;
    await demo.seedAgedHistory(h.db.sql, { rows: 100 });
    expect((await h.db.sql`select payload from ssa_transport_handoffs h join ssa_screening_members m on m.id = h.member_id where m.person_ref = 'live-case:child'`).map((r) => r.payload)).toEqual([{}]);
    for (const table of demo.tables) expect((await h.db.sql`select to_regclass(${table}) is not null as exists`)[0]).toEqual({ exists: true });
    const [counts] = await h.db.sql`
      select (select count(*)::int from ssa_screening_runs) as runs,
             (select count(*)::int from ssa_screening_members) as members,
             (select count(*)::int from ssa_transport_handoffs) as handoffs,
             (select count(*)::int from event_inbox where consumer = 'exchange.cases') as inbox,
             (select count(*)::int from event_outbox) as outbox,
             (select count(*)::int from exchange_send_jobs where status = 'sending') as live`;
    // 100 aged + 5 late + 10 fresh cases, two people each (and the live chain); a handoff per matched member.
    expect(counts).toMatchObject({ runs: 116, members: 231, inbox: 115, outbox: 0, live: 3 });
    const [matched] = await h.db.sql`select count(*)::int as n from ssa_screening_members where status = 'matched'`;
    expect(counts!.handoffs).toBe(matched!.n);

    const run = await call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    expect(run.status).toBe(200);
    const rows = Object.fromEntries(run.body.tables.map((t: { table: string; rows: number }) => [t.table, t.rows]));
    const [agedHandoffs] = await h.db.sql`select count(*)::int as n from ssa_transport_handoffs`;
    // Everything of the 100 aged cases went; of the 5 late ones only the guardians (no handoff),
    // so their runs stay; the 10 fresh runs and members stay.
    expect(rows.ssa_screening_runs).toBe(100);
    expect(rows.ssa_screening_members).toBe(205);
    expect(rows.ssa_transport_handoffs).toBe(counts!.handoffs - agedHandoffs!.n);
    expect((await h.db.sql`select count(*)::int as n from ssa_screening_runs`)[0]!.n).toBe(16);
    expect((await h.db.sql`select count(*)::int as n from ssa_screening_members`)[0]!.n).toBe(26);
    expect((await h.db.sql`select count(*)::int as n from ssa_transport_handoffs h join ssa_screening_members m on m.id = h.member_id where h.created_at > now() - interval '365 days'`)[0]!.n).toBe(agedHandoffs!.n);

    // The send-job sweep: red before, green after; the live jobs stay.
    expect((await retentionOverrun(h.sql, sendJobRetentionSpec(30))).ok).toBe(false);
    const swept = await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30 });
    expect(swept.status).toBe('pruned');
    expect(swept.deleted).toBeGreaterThanOrEqual(100);
    expect((await retentionOverrun(h.sql, sendJobRetentionSpec(30))).ok).toBe(true);
    expect((await h.db.sql`select count(*)::int as n from exchange_send_jobs where status = 'sending'`)[0]!.n).toBe(3);
  });

  it('tick reads the send jobs over HTTP, cancels a live one every tenth tick, and fails loudly on an error answer', async () => {
    await h.db.sql`insert into exchange_send_jobs (case_id, destination) values ('c-tick', 'ssa-gateway')`;
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as { port: number };
    const context = (tick: number, url: string | undefined) => ({ urlOf: (s: string) => (s === 'exchange' ? url : undefined), adminToken: ADMIN_TOKEN, signal: new AbortController().signal, random: Math.random, tick });
    await demo.tick!(context(1, `http://127.0.0.1:${port}`));
    expect((await h.db.sql`select status from exchange_send_jobs where case_id = 'c-tick'`)[0]).toEqual({ status: 'queued' });
    await demo.tick!(context(10, `http://127.0.0.1:${port}`));
    expect((await h.db.sql`select status from exchange_send_jobs where case_id = 'c-tick'`)[0]).toEqual({ status: 'cancelled' });
    await demo.tick!(context(2, undefined));
    await expect(demo.tick!(context(3, `http://127.0.0.1:${port}/nowhere`))).rejects.toThrow('GET /v1/send-jobs answered 404');
  });
});
