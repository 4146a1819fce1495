// What the safety service contributes to `pnpm xtask devstack`.
import { demoRequest, seedAgedInbox, seedAgedOutbox, type AgedInboxRow, type ServiceDemo } from '@craig/service';
import { CASES_CONSUMER } from './consumer.ts';
import { SEVERITIES } from './report-store.ts';

const SUMMARIES = ['missed visit', 'injury reported by school', 'unsafe housing conditions', 'caregiver concern', 'follow-up on earlier report'];

export const demo: ServiceDemo = {
  tables: ['case_refs', 'safety_reports', 'event_outbox', 'event_inbox'],

  // Case refs heard of 40–60 days ago (a third since closed), a report filed for each then, the
  // published `safety.reported` events with the last five pending, the `safety.cases` inbox
  // records of the case events consumed then, and a tenth of it all recent.
  async seedAgedHistory(sql, { rows }) {
    await sql`
      with seeded as (
        select i, gen_random_uuid() as case_id,
               case when i % 10 = 0 then (i % 5) + 4 else 40 + (i * 7) % 21 end::float8 as age_days
        from generate_series(1, ${rows}::int) as i
      ), refs as (
        insert into case_refs (case_id, status, updated_at)
        select case_id, case when i % 3 = 0 then 'closed' else 'open' end, now() - (age_days - 2) * interval '1 day' from seeded
        returning case_id, status
      )
      insert into safety_reports (case_id, severity, summary, reported_at)
      select s.case_id, (${[...SEVERITIES]}::text[])[1 + s.i % 3], (${SUMMARIES}::text[])[1 + s.i % ${SUMMARIES.length}], now() - (s.age_days - 1) * interval '1 day'
      from seeded s join refs r using (case_id)`;
    // A fresh database: every report and case ref here is a seeded one.
    const reports = await sql<{ id: string; case_id: string; severity: string; reported_at: Date; age_days: number; case_closed: boolean }[]>`
      select r.id, r.case_id, r.severity, r.reported_at, extract(epoch from now() - r.reported_at)::float8 / 86400 as age_days, c.status = 'closed' as case_closed
      from safety_reports r join case_refs c using (case_id)
      order by r.reported_at desc, r.id`;
    const inbox: AgedInboxRow[] = [];
    for (const r of reports) {
      inbox.push({ eventType: 'case.opened', ageDays: r.age_days + 1 });
      if (r.case_closed) inbox.push({ eventType: 'case.closed', ageDays: r.age_days - 1 });
    }
    const events = reports.map((r, i) => ({
      aggregateType: 'safety_report',
      aggregateId: r.id,
      eventType: 'safety.reported',
      payload: { reportId: r.id, caseId: r.case_id, severity: r.severity, reportedAt: r.reported_at.toISOString() },
      ageDays: r.age_days,
      published: i < reports.length - 5,
    }));
    await seedAgedOutbox(sql, events);
    await seedAgedInbox(sql, CASES_CONSUMER, inbox);
  },

  // File a report on a random one of the 20 newest open cases (409 until its case.opened
  // has arrived here, which is fine), on about a third of the ticks.
  async tick(context) {
    const base = context.urlOf('safety');
    const cases = context.urlOf('cases');
    if (!base || !cases || context.random() > 0.35) return;
    const open = await demoRequest(context, 'GET', `${cases}/v1/cases?status=open&order=newest&limit=20`);
    const list = (open.body as { cases?: Array<{ id: string }> } | undefined)?.cases ?? [];
    const pick = list[Math.floor(context.random() * list.length)];
    if (!pick) return;
    await demoRequest(context, 'POST', `${base}/v1/safety-reports`, {
      caseId: pick.id,
      severity: SEVERITIES[Math.floor(context.random() * SEVERITIES.length)],
      summary: SUMMARIES[Math.floor(context.random() * SUMMARIES.length)],
    });
  },
};
