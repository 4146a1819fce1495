import type { ServiceDemo } from '@craig/service';
import type { Sql } from 'postgres';

/**
 * Aged history as exchange's own writers would have left it: one opened case per inbox record
 * (`exchange.cases`), each with its send job and its screening run, members and handoffs.
 *
 * - `rows` cases opened 400–800 days ago: run completed within a minute (as_of the day it
 *   started, so past the 12-month freshness horizon too), members terminal, a handoff per
 *   matched member, the send job finished: the whole chain is archivable, the job sweepable.
 * - a twentieth as many opened 500 days ago whose screening answered only 200 days ago: the
 *   handoff is hot, so its member and run stay hot too (the FK guards).
 * - a tenth as many opened 0–300 days ago: hot in the archive's terms; their send jobs are
 *   swept once finished more than SEND_JOB_RETENTION_DAYS ago.
 * - a few jobs to an unreachable destination, still `sending`: never swept.
 *
 * Exchange stages no events, so its outbox stays empty.
 */
async function seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void> {
  const aged = Math.max(1, options.rows);
  const late = Math.max(1, Math.floor(aged / 20));
  const fresh = Math.max(1, Math.floor(aged / 10));
  await sql.begin(async (tx) => {
    // One row per case: when it was opened (the inbox record's received_at), when its screening
    // answered, and which kind it is.
    await tx`create temporary table demo_cases (g integer, case_id text, opened_at timestamptz, answered_at timestamptz) on commit drop`;
    await tx`
      insert into demo_cases (g, case_id, opened_at, answered_at)
      select g, 'demo-case-' || g, opened_at,
             case when g > ${aged} and g <= ${aged + late} then now() - interval '200 days' else opened_at + interval '1 minute' end
      from generate_series(1, ${aged + late + fresh}) g,
           lateral (select now() - make_interval(days => case
             when g <= ${aged} then 400 + (g - 1) * 400 / ${Math.max(1, aged - 1)}
             when g <= ${aged + late} then 500
             else (g * 7) % 301 end, secs => g % 3600) as opened_at) o`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'exchange.cases', gen_random_uuid(), 'case.opened', opened_at from demo_cases`;
    await tx`
      insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
      select case_id, 'ssa-gateway', (array['sent', 'sent', 'failed', 'cancelled'])[1 + g % 4], case when g % 4 = 2 then 3 else 1 end,
             opened_at, opened_at + interval '30 seconds'
      from demo_cases`;
    await tx`
      insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
      select 'demo-unreachable-' || g, 'unreachable-partner', 'sending', 1, now() - make_interval(days => 40 + g), null
      from generate_series(1, 3) g`;
    await tx`
      insert into ssa_screening_runs (case_id, status, as_of, created_at, completed_at)
      select case_id, 'completed', (opened_at at time zone 'UTC')::date, opened_at, answered_at from demo_cases`;
    // Two people per case; the first of every third case matched, the second of every fifth errored.
    await tx`
      insert into ssa_screening_members (run_id, person_ref, status, created_at, completed_at)
      select r.id, c.case_id || ':' || p.role,
             case when p.role = 'child' and c.g % 3 = 0 then 'matched'
                  when p.role = 'guardian' and c.g % 5 = 0 then 'error'
                  when c.g > ${aged} and c.g <= ${aged + late} and p.role = 'child' then 'matched'
                  else 'cleared' end,
             c.opened_at, c.answered_at
      from demo_cases c
      join ssa_screening_runs r on r.case_id = c.case_id
      cross join (values ('child'), ('guardian')) as p(role)`;
    await tx`
      insert into ssa_transport_handoffs (member_id, payload, created_at)
      select m.id, jsonb_build_object('runId', r.id::text, 'caseId', r.case_id, 'personRef', m.person_ref, 'asOf', r.as_of::text), m.completed_at
      from ssa_screening_members m join ssa_screening_runs r on r.id = m.run_id
      -- Only the seeded cases' members: the running worker hands off live ones meanwhile.
      where m.status = 'matched' and r.case_id in (select case_id from demo_cases)`;
  });
}

/** Demo traffic: read the send jobs and a screening; now and then cancel a live job. */
export const demo: ServiceDemo = {
  seedAgedHistory,
  async tick(context) {
    const base = context.urlOf('exchange');
    if (!base) return;
    const res = await fetch(`${base}/v1/send-jobs?limit=20`, { signal: context.signal });
    if (!res.ok) throw new Error(`GET /v1/send-jobs answered ${res.status}`);
    const { sendJobs } = (await res.json()) as { sendJobs: Array<{ id: string; status: string }> };
    if (context.tick % 10 === 0) {
      const live = sendJobs.find((j) => j.status === 'queued' || j.status === 'sending');
      if (live) {
        // 409 send_job_terminal is a fair answer: the worker may have finished it meanwhile.
        const cancel = await fetch(`${base}/v1/send-jobs/${live.id}/cancel`, { method: 'POST', signal: context.signal });
        if (!cancel.ok && cancel.status !== 409) throw new Error(`POST /v1/send-jobs/${live.id}/cancel answered ${cancel.status}`);
        await cancel.arrayBuffer();
      }
    }
  },
  tables: ['exchange_send_jobs', 'ssa_screening_runs', 'ssa_screening_members', 'ssa_transport_handoffs', 'archive_ledger', 'event_outbox', 'event_inbox'],
};
