// Building blocks for `ServiceDemo`: transport rows aged as a service's own
// outbox worker and inbox consumers would have left them, and the requests `tick` makes.
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import type { DemoContext } from './demo.ts';

/**
 * An outbox row `ageDays` old: published (not in the pending queue, as the drain leaves a row it
 * published), or still pending (queued).
 */
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

/**
 * Insert aged outbox rows (fresh event ids) in one INSERT, which queues every row (the enqueue
 * trigger runs at the end of that statement); the published ones are then taken out of the
 * pending queue by a second statement, as the drain does when it publishes them.
 */
export async function seedAgedOutbox(sql: Sql, rows: readonly AgedOutboxRow[]): Promise<void> {
  if (rows.length === 0) return;
  const eventIds = rows.map(() => randomUUID());
  await sql`
    insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
    select r.event_id, r.aggregate_type, r.aggregate_id, r.event_type, r.payload::jsonb,
           now() - r.age_days * interval '1 day'
    from unnest(${eventIds}::uuid[], ${rows.map((r) => r.aggregateType)}::text[], ${rows.map((r) => r.aggregateId)}::text[], ${rows.map((r) => r.eventType)}::text[],
                ${rows.map((r) => JSON.stringify(r.payload))}::text[], ${rows.map((r) => r.ageDays)}::float8[])
      as r(event_id, aggregate_type, aggregate_id, event_type, payload, age_days)`;
  const published = eventIds.filter((_, i) => rows[i]!.published);
  if (published.length > 0) {
    await sql`delete from event_outbox_queue where id in (select id from event_outbox where event_id = any(${published}::uuid[]))`;
  }
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
