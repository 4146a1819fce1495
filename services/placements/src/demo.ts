// What the placements service contributes to `pnpm xtask devstack`.
import { demoRequest, seedAgedInbox, seedAgedOutbox, type AgedInboxRow, type AgedOutboxRow, type ServiceDemo } from '@craig/service';
import { CASES_CONSUMER } from './consumer.ts';

const PROVIDERS = ['Northside Foster Care', 'Harbor Group Home', 'Kinship Network', 'Riverside Residential'];

export const demo: ServiceDemo = {
  tables: ['case_refs', 'placements', 'event_outbox', 'event_inbox'],

  // Cases heard of 40–60 days ago (a third since closed), a placement for each started then
  // (ended by request or by its case's close), their published events with the last five still
  // pending, the inbox records of the case events consumed then, and a tenth of it all recent.
  async seedAgedHistory(sql, { rows }) {
    const placements = await sql<{ id: string; case_id: string; provider: string; started_at: Date; ended_at: Date | null; end_reason: string | null; age_days: number; case_closed: boolean }[]>`
      with seeded as (
        select i, gen_random_uuid() as case_id,
               case when i % 10 = 0 then (i % 5) + 4 else 40 + (i * 7) % 21 end::float8 as age_days
        from generate_series(1, ${rows}::int) as i
      ), refs as (
        insert into case_refs (case_id, status, updated_at)
        select case_id, case when i % 3 = 0 then 'closed' else 'open' end, now() - (age_days - 2) * interval '1 day' from seeded
        returning case_id, status
      )
      insert into placements (case_id, provider, started_at, ended_at, end_reason)
      select s.case_id, (${PROVIDERS}::text[])[1 + s.i % ${PROVIDERS.length}], now() - s.age_days * interval '1 day',
             case when r.status = 'closed' then now() - (s.age_days - 2) * interval '1 day'
                  when s.i % 4 = 1 then now() - (s.age_days - 1) * interval '1 day' end,
             case when r.status = 'closed' then 'case_closed' when s.i % 4 = 1 then 'requested' end
      from seeded s join refs r using (case_id)
      returning id, case_id, provider, started_at, ended_at, end_reason,
                extract(epoch from now() - started_at)::float8 / 86400 as age_days,
                end_reason = 'case_closed' as case_closed`;
    const events: AgedOutboxRow[] = [];
    const inbox: AgedInboxRow[] = [];
    for (const p of placements) {
      inbox.push({ eventType: 'case.opened', ageDays: p.age_days + 0.1 });
      if (p.case_closed) inbox.push({ eventType: 'case.closed', ageDays: p.age_days - 2 });
      events.push({
        aggregateType: 'placement',
        aggregateId: p.id,
        eventType: 'placement.started',
        payload: { placementId: p.id, caseId: p.case_id, provider: p.provider, startedAt: p.started_at.toISOString() },
        ageDays: p.age_days,
        published: true,
      });
      if (p.ended_at) {
        events.push({
          aggregateType: 'placement',
          aggregateId: p.id,
          eventType: 'placement.ended',
          payload: { placementId: p.id, caseId: p.case_id, endedAt: p.ended_at.toISOString(), reason: p.end_reason },
          ageDays: (Date.now() - p.ended_at.getTime()) / 86_400_000,
          published: true,
        });
      }
    }
    for (const e of events.slice(-Math.min(5, events.length))) Object.assign(e, { published: false });
    await seedAgedOutbox(sql, events);
    await seedAgedInbox(sql, CASES_CONSUMER, inbox);
  },

  // Place an open case from the cases service (refused with 409 until the case.opened has
  // arrived here, which is fine), and now and then end an active placement.
  async tick(context) {
    const base = context.urlOf('placements');
    if (!base) return;
    const cases = context.urlOf('cases');
    if (cases) {
      const open = await demoRequest(context, 'GET', `${cases}/v1/cases?status=open&order=newest&limit=20`);
      const list = (open.body as { cases?: Array<{ id: string }> } | undefined)?.cases ?? [];
      const pick = list[Math.floor(context.random() * list.length)];
      if (pick) await demoRequest(context, 'POST', `${base}/v1/placements`, { caseId: pick.id, provider: PROVIDERS[Math.floor(context.random() * PROVIDERS.length)] });
    }
    if (context.random() < 0.7) return;
    const active = await demoRequest(context, 'GET', `${base}/v1/placements?status=active&limit=100`);
    const placements = (active.body as { placements?: Array<{ id: string }> } | undefined)?.placements ?? [];
    const end = placements[Math.floor(context.random() * placements.length)];
    if (end) await demoRequest(context, 'POST', `${base}/v1/placements/${end.id}/end`);
  },
};
