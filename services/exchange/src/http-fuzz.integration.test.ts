// Every route of the exchange API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { describeHttpFuzz, fc } from '@craig/service-testkit';
import { SEND_JOB_STATUSES } from './send-jobs.ts';
import { ADMIN_TOKEN, serviceHarness } from '../test/harness.ts';

const h = await serviceHarness({ prefix: 'exchange_fuzz' });
const jobs = await h.db.sql<{ id: string }[]>`
  insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
  select 'c-' || g, 'ssa-gateway', s, 1, now() - make_interval(mins => g::int), case when s in ('queued', 'sending') then null else now() end
  from unnest(array['queued', 'sending', 'sent', 'failed', 'cancelled']) with ordinality as u(s, g)
  returning id::text`;
const runs = await h.db.sql<{ id: string }[]>`
  insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
  values ('c-1', 'running', current_date, now(), null), ('c-2', 'completed', current_date, now(), now()),
         ('c-3', 'completed', (current_date - interval '30 months')::date, now() - interval '30 months', now() - interval '30 months')
  returning id::text`;
const id = (ids: readonly { id: string }[]) => fc.oneof(fc.constantFrom(...ids.map((r) => r.id)), fc.bigInt({ min: 1n, max: 10n ** 18n }).map(String));

describeHttpFuzz({
  service: 'exchange',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'GET /v1/send-jobs': { query: { status: fc.constantFrom(...SEND_JOB_STATUSES), limit: fc.integer({ min: 0, max: 501 }).map(String) } },
    'POST /v1/send-jobs/:id/cancel': { params: { id: id(jobs) } },
    'GET /v1/screenings/:id': { params: { id: id(runs) } },
    'POST /v1/screenings/:id/invalidate': { params: { id: id(runs) } },
    'POST /v1/admin/archive/run': { costly: true },
  },
});
