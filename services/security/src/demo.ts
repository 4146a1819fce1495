import type { ServiceDemo } from '@craig/service';
import type { Sql } from 'postgres';

const EVENT_TYPES = ['case.opened', 'case.closed', 'placement.started', 'placement.ended', 'safety.reported', 'rule.evaluated'] as const;
const SOURCES: Record<string, string> = { case: 'cases', placement: 'placements', safety: 'safety', rule: 'rules' };

/**
 * Aged history as security's own writers would have left it: audit rows (each with the inbox
 * record written in the same transaction) received 100–400 days ago, past the 90-day hot
 * window, so the archive has work at once, and a tenth as many fresh ones that stay hot; dead
 * letters, aged and fresh; published archive announcements in the outbox, aged past the 30-day
 * outbox window and fresh.
 */
async function seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void> {
  const aged = Math.max(1, options.rows);
  const fresh = Math.max(1, Math.floor(aged / 10));
  const letters = Math.max(1, Math.floor(aged / 50));
  await sql.begin(async (tx) => {
    // One (event, received_at) per row; the inbox record and the audit row share both, as the
    // inbox transaction writes them. Ages in days: 100…400 for the aged rows, 0…30 for fresh.
    await tx`create temporary table demo_seen (event_id uuid, event_type text, g integer, received_at timestamptz) on commit drop`;
    await tx`
      insert into demo_seen (event_id, event_type, g, received_at)
      select gen_random_uuid() as event_id,
             (${EVENT_TYPES}::text[])[1 + g % ${EVENT_TYPES.length}] as event_type,
             g,
             now() - make_interval(days => case when g <= ${aged} then 100 + (g - 1) * 300 / ${Math.max(1, aged - 1)} else g % 31 end, secs => g % 86400) as received_at
      from generate_series(1, ${aged + fresh}) g`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'security.audit', event_id, event_type, received_at from demo_seen`;
    await tx`
      insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, headers, occurred_at, received_at)
      select event_id, event_type, split_part(event_type, '.', 1), 'demo-' || (g % 997),
             (${JSON.stringify(SOURCES)}::text::jsonb) ->> split_part(event_type, '.', 1),
             jsonb_build_object('demo', true, 'n', g), '{}'::jsonb,
             received_at - make_interval(secs => 1 + g % 30), received_at
      from demo_seen`;
    await tx`
      insert into dead_letter_audit (consumer, message_id, event_id, routing_key, error, attempts, deliveries, body, headers, dead_lettered_at, received_at)
      select c, e::text, e, 'case.opened', 'handler failed: demo', 6, 6,
             jsonb_build_object('eventId', e, 'eventType', 'case.opened')::text, '{}'::jsonb, at, at
      from (
        select case when g % 2 = 0 then 'placements.cases' else 'safety.cases' end as c, gen_random_uuid() as e,
               now() - make_interval(days => case when g <= ${letters} then 100 + g % 301 else g % 31 end) as at
        from generate_series(1, ${letters * 2}) g
      ) l`;
    // Announcements of earlier archive batches, published minutes after they were staged.
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, published_at)
      select id, 'archive', id::text, 'security.archive.batch',
             jsonb_build_object('archiveId', id, 'table', 'audit_log', 'rows', 5000), '{}'::jsonb, at, at + interval '2 seconds'
      from (select gen_random_uuid() as id, now() - make_interval(days => 1 + g % 200) as at from generate_series(1, ${Math.max(2, Math.floor(aged / 100))}) g) o`;
  });
}

/** Security only observes: its demo traffic is a light read of its audit API. */
export const demo: ServiceDemo = {
  seedAgedHistory,
  async tick(context) {
    const base = context.urlOf('security');
    if (!base) return;
    const res = await fetch(`${base}/v1/audit?limit=20`, { signal: context.signal });
    if (!res.ok) throw new Error(`GET /v1/audit answered ${res.status}`);
    await res.arrayBuffer();
  },
  tables: ['audit_log', 'dead_letter_audit', 'archive_ledger', 'event_outbox', 'event_inbox'],
};
