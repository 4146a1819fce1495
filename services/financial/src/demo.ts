import type { ServiceDemo } from '@craig/service';
import type { Sql } from 'postgres';

/**
 * Aged history as financial's own writers would have left it, for `rows` = N:
 * - N settled queue rows settled 100–400 days ago, every tenth 1,000+ days ago, past the 90-day
 *   window (the sweep's work), and N/10 settled 40–60 days ago that stay;
 * - N/10 pending rows enqueued up to 200 days ago and N/20 matched ones (never swept, any age);
 * - for every settled row its import (one per month, source `demo-county`) and line, and its
 *   `subsidy.settled` outbox row, published, except three aged ones still pending;
 * - for every queue row the inbox record of the placement event that enqueued it.
 */
async function seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void> {
  const aged = Math.max(2, options.rows);
  const recent = Math.max(3, Math.floor(aged / 10));
  const pending = Math.max(1, Math.floor(aged / 10));
  const matched = Math.max(1, Math.floor(aged / 20));
  await sql.begin(async (tx) => {
    await tx`
      create temporary table demo_queue (
        g integer, event_id uuid, placement_id text, case_id text, kind text, status text,
        enqueued_at timestamptz, matched_at timestamptz, settled_at timestamptz, amount numeric(14, 2)
      ) on commit drop`;
    // Settled: aged (100–400 days, every tenth 1,000+) then recent (40–60 days).
    await tx`
      insert into demo_queue
      select g, gen_random_uuid(), 'demo-placement-' || g, 'demo-case-' || (g % 97),
             case when g % 2 = 0 then 'placement_ended' else 'placement_started' end, 'settled',
             s - make_interval(days => 2 + g % 5), s - interval '1 day', s, (100 + g % 1900)::numeric + (g % 100) / 100.0
      from (
        select g, now() - make_interval(days => case
                 when g > ${aged} then 40 + (g - ${aged}) * 20 / ${recent}
                 when g % 10 = 0 then 1000 + g % 500
                 else 100 + (g - 1) * 300 / ${aged - 1} end, secs => g % 86400) as s
        from generate_series(1, ${aged + recent}::int) g
      ) x`;
    // Matched (waiting for settlement) and pending (waiting for an import), of any age.
    await tx`
      insert into demo_queue
      select g, gen_random_uuid(), 'demo-placement-' || g, 'demo-case-' || (g % 97),
             case when g % 2 = 0 then 'placement_ended' else 'placement_started' end,
             case when g <= ${aged + recent + matched} then 'matched' else 'pending' end,
             now() - make_interval(days => g % 200, secs => g % 3600),
             case when g <= ${aged + recent + matched} then now() - make_interval(secs => g % 3600) end, null,
             case when g <= ${aged + recent + matched} then 250.00 end
      from generate_series(${aged + recent + 1}::int, ${aged + recent + matched + pending}::int) g`;
    await tx`
      insert into subsidy_imports (source, period, status, row_count, matched_count, imported_at, completed_at)
      select 'demo-county', p, 'completed', n, n, at, at
      from (select date_trunc('month', matched_at)::date as p, count(*)::int as n, min(matched_at) as at from demo_queue where matched_at is not null group by 1) m`;
    await tx`
      insert into subsidy_import_lines (import_id, line_no, placement_id, amount, matched)
      select i.id, row_number() over (partition by i.id order by q.g), q.placement_id, q.amount, true
      from demo_queue q join subsidy_imports i on i.source = 'demo-county' and i.period = date_trunc('month', q.matched_at)::date`;
    await tx`
      insert into subsidy_reconcile_queue (event_id, placement_id, case_id, kind, amount, status, import_id, import_line, enqueued_at, matched_at, settled_at)
      select q.event_id, q.placement_id, q.case_id, q.kind, q.amount, q.status, l.import_id, l.line_no, q.enqueued_at, q.matched_at, q.settled_at
      from demo_queue q
      left join subsidy_imports i on i.source = 'demo-county' and i.period = date_trunc('month', q.matched_at)::date
      left join subsidy_import_lines l on l.import_id = i.id and l.placement_id = q.placement_id`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'financial.placements', event_id, replace(kind, '_', '.'), enqueued_at from demo_queue`;
    // Three aged announcements still pending: evidence the transport sweep must keep.
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, published_at)
      select gen_random_uuid(), 'placement', placement_id, 'subsidy.settled',
             jsonb_build_object('placementId', placement_id, 'caseId', case_id, 'kind', kind, 'amount', amount::text, 'settledAt', settled_at),
             '{}'::jsonb, settled_at, case when g in (${aged + 1}, ${aged + 2}, ${aged + 3}) then null else settled_at + interval '2 seconds' end
      from demo_queue where status = 'settled'`;
  });
}

interface QueueAnswer {
  rows: Array<{ placementId: string }>;
}

/** Every tenth tick: an import matching a few pending rows, then a settlement (both over HTTP). */
async function tick(context: Parameters<NonNullable<ServiceDemo['tick']>>[0]): Promise<void> {
  const base = context.urlOf('financial');
  if (!base || context.tick % 10 !== 0) return;
  const queue = await fetch(`${base}/v1/reconcile-queue?status=pending&limit=5`, { signal: context.signal });
  if (!queue.ok) throw new Error(`GET /v1/reconcile-queue answered ${queue.status}`);
  const pending = ((await queue.json()) as QueueAnswer).rows;
  if (pending.length > 0) {
    const lines = pending.map((r) => ({ placementId: r.placementId, amount: (100 + Math.floor(context.random() * 190_000) / 100).toFixed(2) }));
    const month = new Date().toISOString().slice(0, 7);
    const imported = await fetch(`${base}/v1/subsidy-imports`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source: `demo-feed-${context.tick}-${Math.floor(context.random() * 1e9)}`, period: month, lines }),
      signal: context.signal,
    });
    if (!imported.ok) throw new Error(`POST /v1/subsidy-imports answered ${imported.status}: ${await imported.text()}`);
    await imported.arrayBuffer();
  }
  const settled = await fetch(`${base}/v1/admin/reconcile/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${context.adminToken}` },
    body: JSON.stringify({ limit: 50 }),
    signal: context.signal,
  });
  if (!settled.ok) throw new Error(`POST /v1/admin/reconcile/settle answered ${settled.status}`);
  await settled.arrayBuffer();
}

/** What `pnpm xtask devstack` seeds and drives for financial. */
export const demo: ServiceDemo = {
  seedAgedHistory,
  tick,
  tables: ['subsidy_reconcile_queue', 'subsidy_imports', 'event_outbox', 'event_inbox'],
};
