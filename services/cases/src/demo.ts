// What the cases service contributes to `pnpm xtask devstack`.
import { demoRequest, seedAgedOutbox, type AgedOutboxRow, type ServiceDemo } from '@craig/service';

/** The live working set of open cases the demo keeps. */
const OPEN_TARGET = 20;

export const demo: ServiceDemo = {
  tables: ['cases', 'event_outbox', 'event_inbox'],

  // Cases opened 40–60 days ago (two in three closed a few days later) with the events their
  // writers staged, all published; the last few events still pending (the sweep must keep
  // them); and a tenth of the rows recent. Cases consumes nothing, so it has no inbox rows.
  async seedAgedHistory(sql, { rows }) {
    const cases = await sql<{ id: string; opened_at: Date; closed_at: Date | null; age_days: number }[]>`
      insert into cases (subject, opened_at, closed_at)
      select 'seeded case ' || i,
             now() - a.age_days * interval '1 day',
             case when i % 3 <> 0 then now() - (a.age_days - 3) * interval '1 day' end
      from generate_series(1, ${rows}::int) as i,
           lateral (select case when i % 10 = 0 then (i % 5) + 4 else 40 + (i * 7) % 21 end::float8 as age_days) as a
      returning id, opened_at, closed_at, extract(epoch from now() - opened_at)::float8 / 86400 as age_days`;
    const events: AgedOutboxRow[] = [];
    for (const c of cases) {
      events.push({ aggregateType: 'case', aggregateId: c.id, eventType: 'case.opened', payload: { caseId: c.id, openedAt: c.opened_at.toISOString() }, ageDays: c.age_days, published: true });
      if (c.closed_at) {
        events.push({ aggregateType: 'case', aggregateId: c.id, eventType: 'case.closed', payload: { caseId: c.id, closedAt: c.closed_at.toISOString() }, ageDays: c.age_days - 3, published: true });
      }
    }
    // Staged but never published (a transport that was down): evidence the sweep keeps.
    for (const e of events.slice(-Math.min(5, events.length))) Object.assign(e, { published: false });
    await seedAgedOutbox(sql, events);
  },

  // Open a case every tick; on half the ticks close the OPEN_TARGET-th newest open case, so the
  // live working set (the cases placements and safety have heard of) stays about that size and
  // closes keep flowing (and end placements).
  async tick(context) {
    const base = context.urlOf('cases');
    if (!base) return;
    await demoRequest(context, 'POST', `${base}/v1/cases`, { subject: `demo case ${context.tick}` });
    if (context.random() < 0.5) return;
    const open = await demoRequest(context, 'GET', `${base}/v1/cases?status=open&order=newest&limit=${OPEN_TARGET}`);
    const cases = (open.body as { cases?: Array<{ id: string }> } | undefined)?.cases ?? [];
    if (cases.length === OPEN_TARGET) await demoRequest(context, 'POST', `${base}/v1/cases/${cases[cases.length - 1]!.id}/close`);
  },
};
