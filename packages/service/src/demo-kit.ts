// Building blocks for `ServiceDemo`: transport rows aged as a service's own
// outbox worker and inbox consumers would have left them, and the requests `tick` makes.
import type { Sql } from 'postgres';
import type { DemoContext } from './demo.ts';

/** An outbox row `ageDays` old; published a second after it was staged, or still pending. */
export interface AgedOutboxRow {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly ageDays: number;
  readonly published: boolean;
}

/** An inbox dedup record `ageDays` old. */
export interface AgedInboxRow {
  readonly eventType: string;
  readonly ageDays: number;
}

/** Insert aged outbox rows (fresh event ids) in one statement. */
export async function seedAgedOutbox(sql: Sql, rows: readonly AgedOutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
    select gen_random_uuid(), r.aggregate_type, r.aggregate_id, r.event_type, r.payload::jsonb,
           now() - r.age_days * interval '1 day',
           case when r.published = 1 then now() - r.age_days * interval '1 day' + interval '1 second' end
    from unnest(${rows.map((r) => r.aggregateType)}::text[], ${rows.map((r) => r.aggregateId)}::text[], ${rows.map((r) => r.eventType)}::text[],
                ${rows.map((r) => JSON.stringify(r.payload))}::text[], ${rows.map((r) => r.ageDays)}::float8[], ${rows.map((r) => (r.published ? 1 : 0))}::int[])
      as r(aggregate_type, aggregate_id, event_type, payload, age_days, published)`;
}

/** Insert aged inbox dedup records of `consumer` (fresh event ids) in one statement. */
export async function seedAgedInbox(sql: Sql, consumer: string, rows: readonly AgedInboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into event_inbox (consumer, event_id, event_type, received_at)
    select ${consumer}, gen_random_uuid(), r.event_type, now() - r.age_days * interval '1 day'
    from unnest(${rows.map((r) => r.eventType)}::text[], ${rows.map((r) => r.ageDays)}::float8[]) as r(event_type, age_days)`;
}

/** A JSON request a demo's `tick` makes to a service of the stack; never throws for a status. */
export async function demoRequest(context: Pick<DemoContext, 'signal'>, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method,
    signal: context.signal,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}
