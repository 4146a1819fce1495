// The simulated worker: deterministic transitions, every UPDATE guarded by its source status,
// so a terminal row is never moved again (by a later step, or after a cancel won the race).
import { Registry } from 'prom-client';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, counterValue, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { ExchangeWorker } from './worker.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_work' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate exchange_send_jobs, ssa_transport_handoffs, ssa_screening_members, ssa_screening_runs`;
});

const jobs = async () =>
  h.db.sql<{ case_id: string; status: string; attempts: number; finished: boolean }[]>`
    select case_id, status, attempts, finished_at is not null as finished from exchange_send_jobs order by id`;

async function screening(caseId: string, people: string[]): Promise<string> {
  const [run] = await h.db.sql<{ id: string }[]>`insert into ssa_screening_runs (case_id) values (${caseId}) returning id::text`;
  for (const p of people) await h.db.sql`insert into ssa_screening_members (run_id, person_ref) values (${run!.id}, ${p})`;
  return run!.id;
}

describe('the exchange worker', () => {
  it('delivers send jobs on the first attempt, and fails an unreachable one at maxAttempts', async () => {
    await h.db.sql`insert into exchange_send_jobs (case_id, destination) values ('c-ok', 'ssa-gateway'), ('c-down', 'unreachable-partner')`;
    const worker = new ExchangeWorker({ sql: h.sql, registry: new Registry(), maxAttempts: 3 });
    expect(await worker.step()).toMatchObject({ sent: 1, failed: 0, retried: 1 });
    expect(await jobs()).toEqual([
      { case_id: 'c-ok', status: 'sent', attempts: 1, finished: true },
      { case_id: 'c-down', status: 'sending', attempts: 1, finished: false },
    ]);
    expect(await worker.step()).toMatchObject({ sent: 0, failed: 0, retried: 1 });
    expect(await worker.step()).toMatchObject({ sent: 0, failed: 1, retried: 0 });
    expect((await jobs())[1]).toEqual({ case_id: 'c-down', status: 'failed', attempts: 3, finished: true });
    // Terminal jobs are never picked again.
    const before = await h.db.sql`select id, xmin::text from exchange_send_jobs order by id`;
    expect(await worker.step()).toMatchObject({ sent: 0, failed: 0, retried: 0 });
    expect(await h.db.sql`select id, xmin::text from exchange_send_jobs order by id`).toEqual(before);
  });

  it('completes members by person_ref, writes one handoff per matched member, then completes the run; an all-error run fails', async () => {
    const ok = await screening('c-1', ['p-1!match', 'p-2!clear', 'p-3!error']);
    const bad = await screening('c-2', ['p-4!error']);
    const registry = new Registry();
    const worker = new ExchangeWorker({ sql: h.sql, registry });
    expect(await worker.step()).toMatchObject({ membersCompleted: 4, handoffs: 1, runsCompleted: 1, runsFailed: 1 });
    const members = await h.db.sql`select person_ref, status, completed_at is not null as done from ssa_screening_members order by id`;
    expect(members).toEqual([
      { person_ref: 'p-1!match', status: 'matched', done: true },
      { person_ref: 'p-2!clear', status: 'cleared', done: true },
      { person_ref: 'p-3!error', status: 'error', done: true },
      { person_ref: 'p-4!error', status: 'error', done: true },
    ]);
    const [handoff] = await h.db.sql`select m.person_ref, h.payload from ssa_transport_handoffs h join ssa_screening_members m on m.id = h.member_id`;
    expect(handoff).toMatchObject({ person_ref: 'p-1!match', payload: { runId: ok, caseId: 'c-1', personRef: 'p-1!match', asOf: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) } });
    expect(await h.db.sql`select id::text, status, completed_at is not null as done from ssa_screening_runs order by ssa_screening_runs.id`).toEqual([
      { id: ok, status: 'completed', done: true },
      { id: bad, status: 'failed', done: true },
    ]);
    expect(await counterValue(registry, 'exchange_transitions_total', { table: 'ssa_transport_handoffs', status: 'written' })).toBe(1);

    // Nothing terminal moves again, however often the worker steps.
    const snapshot = async () => h.db.sql`
      select 'run' as kind, id, xmin::text from ssa_screening_runs union all
      select 'member', id, xmin::text from ssa_screening_members union all
      select 'handoff', id, xmin::text from ssa_transport_handoffs order by 1, 2`;
    const before = await snapshot();
    for (let i = 0; i < 3; i++) expect(await worker.step()).toMatchObject({ membersCompleted: 0, handoffs: 0, runsCompleted: 0, runsFailed: 0 });
    expect(await snapshot()).toEqual(before);
  });

  it('decides an unmarked person by the MD5 of the reference, the same way every time', async () => {
    const people = Array.from({ length: 40 }, (_, i) => `person-${i}`);
    await screening('c-md5', people);
    await new ExchangeWorker({ sql: h.sql, registry: new Registry() }).step();
    const expected = await h.db.sql<{ person_ref: string; expected: string }[]>`
      select p as person_ref, case when get_byte(decode(md5(p), 'hex'), 0) < 64 then 'matched' else 'cleared' end as expected
      from unnest(${people}::text[]) p`;
    const got = await h.db.sql<{ person_ref: string; status: string }[]>`select person_ref, status from ssa_screening_members`;
    const byRef = new Map(got.map((r) => [r.person_ref, r.status]));
    for (const e of expected) expect(byRef.get(e.person_ref)).toBe(e.expected);
    expect(new Set(got.map((r) => r.status))).toEqual(new Set(['matched', 'cleared']));
    expect((await h.db.sql`select count(*)::int as n from ssa_transport_handoffs`)[0]!.n).toBe(got.filter((r) => r.status === 'matched').length);
  });

  it('a cancel racing the worker: each job ends in exactly one terminal state and the loser changes nothing', async () => {
    await h.db.sql`insert into exchange_send_jobs (case_id, destination) select 'race-' || g, 'ssa-gateway' from generate_series(1, 30) g`;
    const ids = (await h.db.sql<{ id: string }[]>`select id::text from exchange_send_jobs order by exchange_send_jobs.id`).map((r) => r.id);
    const worker = new ExchangeWorker({ sql: h.sql, registry: new Registry(), batchSize: 5 });
    const cancels = Promise.all(ids.map((id) => call(h.app, 'POST', `/v1/send-jobs/${id}/cancel`)));
    const steps = (async () => {
      for (let i = 0; i < 8; i++) await worker.step();
    })();
    const [answers] = await Promise.all([cancels, steps]);
    const final = await h.db.sql<{ id: string; status: string; attempts: number }[]>`select id::text, status, attempts from exchange_send_jobs order by exchange_send_jobs.id`;
    answers.forEach((a, i) => {
      const row = final[i]!;
      if (a.status === 200) {
        expect(row.status).toBe('cancelled');
        expect(row.attempts).toBe(0);
      } else {
        expect(a.status).toBe(409);
        expect(a.body.error).toMatchObject({ code: 'send_job_terminal', status: 'sent' });
        expect(row).toMatchObject({ status: 'sent', attempts: 1 });
      }
    });
    expect(final.every((r) => r.status === 'sent' || r.status === 'cancelled')).toBe(true);
  });

  it('the loop steps until its signal aborts', async () => {
    await h.db.sql`insert into exchange_send_jobs (case_id, destination) values ('c-loop', 'ssa-gateway')`;
    const stop = new AbortController();
    const loop = h.service.worker.run(stop.signal);
    await eventually(async () => expect((await jobs())[0]).toMatchObject({ status: 'sent' }), { timeoutMs: 5_000 });
    stop.abort();
    await loop;
  });
});
