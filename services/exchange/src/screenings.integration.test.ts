// The screening API and the writer-side refusal protecting ssa_screening_runs.invalidated_at:
// one UPDATE with notAtFixpoint in its WHERE, refused by the database for a completed run past
// the SCREENING_FRESHNESS_MONTHS horizon.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { SCREENING_FRESHNESS_MONTHS } from './archive-specs.ts';
import { invalidateScreening } from './screenings.ts';
import { ScreeningPastFreshnessError } from './errors.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_scr' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate ssa_transport_handoffs, ssa_screening_members, ssa_screening_runs`;
});

async function run(status: 'running' | 'completed' | 'failed', asOfMonthsAgo: number): Promise<string> {
  const [row] = await h.db.sql<{ id: string }[]>`
    insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
    values ('c-1', ${status}, (current_date - make_interval(months => ${asOfMonthsAgo}))::date, now() - make_interval(months => ${asOfMonthsAgo}),
            case when ${status} = 'running' then null else now() - make_interval(months => ${asOfMonthsAgo}) end)
    returning id::text`;
  return row!.id;
}

const version = async (id: string) => (await h.db.sql<{ xmin: string; invalidated_at: Date | null }[]>`select xmin::text, invalidated_at from ssa_screening_runs where id = ${id}`)[0]!;

describe('POST /v1/screenings/:id/invalidate', () => {
  it('stamps a running run, a failed one, and a completed one inside the freshness horizon; a second call keeps the first stamp', async () => {
    for (const [status, months] of [['running', 0], ['failed', 30], ['completed', SCREENING_FRESHNESS_MONTHS - 1]] as const) {
      const id = await run(status, months);
      const first = await call(h.app, 'POST', `/v1/screenings/${id}/invalidate`);
      expect(first.status).toBe(200);
      expect(first.body.screening).toMatchObject({ id, status, invalidatedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/) });
      const second = await call(h.app, 'POST', `/v1/screenings/${id}/invalidate`);
      expect(second.body.screening.invalidatedAt).toBe(first.body.screening.invalidatedAt);
    }
  });

  it('refuses a completed run past the horizon with a typed 409, and the run is not changed (no new row version)', async () => {
    const id = await run('completed', SCREENING_FRESHNESS_MONTHS + 1);
    const before = await version(id);
    const res = await call(h.app, 'POST', `/v1/screenings/${id}/invalidate`);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'screening_past_freshness', screeningId: id, freshnessMonths: SCREENING_FRESHNESS_MONTHS, asOf: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    // The guarded UPDATE matched nothing: the same tuple, invalidated_at still null.
    expect(await version(id)).toEqual(before);
    expect(before.invalidated_at).toBeNull();
    await expect(invalidateScreening(h.sql, id)).rejects.toBeInstanceOf(ScreeningPastFreshnessError);
  });

  it('the horizon is the database clock and the bound parameter: a completed run one day either side of it', async () => {
    const [inside] = await h.db.sql<{ id: string }[]>`
      insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
      values ('c-in', 'completed', (current_date - make_interval(months => ${SCREENING_FRESHNESS_MONTHS}) + interval '1 day')::date, now() - interval '400 days', now() - interval '400 days')
      returning id::text`;
    const [outside] = await h.db.sql<{ id: string }[]>`
      insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
      values ('c-out', 'completed', (current_date - make_interval(months => ${SCREENING_FRESHNESS_MONTHS}) - interval '1 day')::date, now() - interval '400 days', now() - interval '400 days')
      returning id::text`;
    expect((await call(h.app, 'POST', `/v1/screenings/${inside!.id}/invalidate`)).status).toBe(200);
    expect((await call(h.app, 'POST', `/v1/screenings/${outside!.id}/invalidate`)).status).toBe(409);
  });

  it('answers 404 for an absent run and 400 for a malformed id', async () => {
    const absent = await call(h.app, 'POST', '/v1/screenings/987654/invalidate');
    expect(absent.status).toBe(404);
    expect(absent.body.error).toMatchObject({ code: 'screening_not_found', screeningId: '987654' });
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      const res = await call(h.app, 'POST', `/v1/screenings/${bad}/invalidate`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', parameter: 'id', value: bad });
    }
  });
});

describe('GET /v1/screenings/:id', () => {
  it('returns the run with its members and whether each was handed off; 404 when absent', async () => {
    const id = await run('completed', 1);
    await h.db.sql`
      insert into ssa_screening_members (run_id, person_ref, status, completed_at) values (${id}, 'p-a', 'matched', now()), (${id}, 'p-b', 'cleared', now())`;
    await h.db.sql`insert into ssa_transport_handoffs (member_id, payload) select id, '{}' from ssa_screening_members where person_ref = 'p-a'`;
    const res = await call(h.app, 'GET', `/v1/screenings/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.screening).toMatchObject({ id, caseId: 'c-1', status: 'completed', invalidatedAt: null, asOf: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    expect(res.body.screening.members.map((m: { personRef: string; status: string; handedOff: boolean }) => [m.personRef, m.status, m.handedOff])).toEqual([
      ['p-a', 'matched', true],
      ['p-b', 'cleared', false],
    ]);
    expect((await call(h.app, 'GET', '/v1/screenings/424242')).body.error).toMatchObject({ code: 'screening_not_found' });
  });
});
