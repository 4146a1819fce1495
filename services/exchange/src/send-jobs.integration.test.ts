// The send-job API: bounded, validated listing; cancel is one guarded UPDATE and a finished job
// answers a typed 409.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_api' });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate exchange_send_jobs`;
  await h.db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
    select 'c-' || g, 'ssa-gateway', s, 1, now() - make_interval(mins => (10 - g)::int), case when s in ('queued', 'sending') then null else now() end
    from unnest(array['queued', 'sending', 'sent', 'failed', 'cancelled', 'queued']) with ordinality as u(s, g)`;
});

const idOf = async (caseId: string) => (await h.db.sql<{ id: string }[]>`select id::text from exchange_send_jobs where case_id = ${caseId}`)[0]!.id;

describe('GET /v1/send-jobs', () => {
  it('lists newest first, filtered by status, bounded by limit', async () => {
    const all = await call(h.app, 'GET', '/v1/send-jobs');
    expect(all.status).toBe(200);
    expect(all.body.sendJobs.map((j: { caseId: string }) => j.caseId)).toEqual(['c-6', 'c-5', 'c-4', 'c-3', 'c-2', 'c-1']);
    expect(all.body.sendJobs[3]).toMatchObject({ caseId: 'c-3', destination: 'ssa-gateway', status: 'sent', attempts: 1, finishedAt: expect.stringMatching(/Z$/) });
    const queued = await call(h.app, 'GET', '/v1/send-jobs?status=queued&limit=1');
    expect(queued.body.sendJobs.map((j: { caseId: string }) => j.caseId)).toEqual(['c-6']);
  });

  it.each([
    ['status=done', 'status', 'done'],
    ['limit=0', 'limit', '0'],
    ['limit=501', 'limit', '501'],
    ['limit=x', 'limit', 'x'],
    ['caseId=c-1', 'caseId', 'c-1'],
  ])('refuses %s with a typed 400 naming the value', async (query, parameter, value) => {
    const res = await call(h.app, 'GET', `/v1/send-jobs?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', parameter, value });
  });
});

describe('POST /v1/send-jobs/:id/cancel', () => {
  it('cancels a queued or sending job, stamping finished_at', async () => {
    for (const caseId of ['c-1', 'c-2']) {
      const res = await call(h.app, 'POST', `/v1/send-jobs/${await idOf(caseId)}/cancel`);
      expect(res.status).toBe(200);
      expect(res.body.sendJob).toMatchObject({ caseId, status: 'cancelled', finishedAt: expect.stringMatching(/Z$/) });
    }
  });

  it('answers 409 send_job_terminal for a finished job and leaves it as it was; 404 for an absent one', async () => {
    for (const [caseId, status] of [['c-3', 'sent'], ['c-4', 'failed'], ['c-5', 'cancelled']] as const) {
      const id = await idOf(caseId);
      const [before] = await h.db.sql`select xmin::text, status, finished_at from exchange_send_jobs where id = ${id}`;
      const res = await call(h.app, 'POST', `/v1/send-jobs/${id}/cancel`);
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: 'send_job_terminal', jobId: id, status });
      expect((await h.db.sql`select xmin::text, status, finished_at from exchange_send_jobs where id = ${id}`)[0]).toEqual(before);
    }
    const absent = await call(h.app, 'POST', '/v1/send-jobs/123456789/cancel');
    expect(absent.status).toBe(404);
    expect(absent.body.error).toMatchObject({ code: 'send_job_not_found', jobId: '123456789' });
  });
});

describe('service endpoints', () => {
  it('serves health, readiness, metrics and the event admin routes behind the token', async () => {
    expect((await call(h.app, 'GET', '/healthz')).body).toEqual({ status: 'ok', service: 'exchange' });
    expect((await call(h.app, 'GET', '/readyz')).status).toBe(200);
    const metrics = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('archive_batches_total');
    const replay = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString() };
    expect((await h.app.inject({ method: 'POST', url: '/v1/admin/events/replay', payload: replay })).statusCode).toBe(401);
    const ok = await h.app.inject({ method: 'POST', url: '/v1/admin/events/replay', payload: replay, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ replayed: 0 });
  });
});
