import type { Sql, TransactionSql } from '@craig/db';
import type { DeadLetter, EventEnvelope } from '@craig/mq';

/** Most rows one read of the audit API returns. */
export const MAX_AUDIT_PAGE = 500;
/** Rows a read returns when `limit` is absent. */
export const DEFAULT_AUDIT_PAGE = 100;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One `audit_log` row as the API returns it. */
export interface AuditRow {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly source: string;
  readonly payload: unknown;
  readonly headers: Record<string, string>;
  readonly occurredAt: string;
  readonly receivedAt: string;
}

/** One `dead_letter_audit` row as the API returns it. */
export interface DeadLetterRow {
  readonly id: string;
  readonly consumer: string;
  readonly messageId: string;
  readonly eventId: string | null;
  readonly routingKey: string;
  readonly error: string;
  /** The handler attempt the consumer got to. */
  readonly attempts: number;
  /** Times the message was handed to a handler; null for letters audited before it was counted. */
  readonly deliveries: number | null;
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly deadLetteredAt: string;
  readonly receivedAt: string;
}

/**
 * Write the audit row of one event, in the caller's (inbox) transaction: the row exists exactly
 * when the event's inbox record does, so a duplicate delivery writes nothing.
 */
export async function recordEvent(tx: TransactionSql, event: EventEnvelope, body: string): Promise<void> {
  // Payload and headers are taken from the raw body by the database, not re-serialized from the
  // decoded envelope: jsonb keeps integers beyond 2^53 and decimal digits exactly, JSON.parse would not.
  await tx`
    insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, headers, occurred_at)
    select ${event.eventId}, ${event.eventType}, ${event.aggregateType}, ${event.aggregateId}, ${event.source},
           b -> 'payload', coalesce(b -> 'headers', '{}'::jsonb), ${event.occurredAt}::timestamptz
    from (select ${body}::text::jsonb as b) as envelope`;
}

/**
 * Write one dead letter, with its attempts and delivery count. The dead-letter queue is
 * at-least-once; a redelivered letter (same consumer, message id and dead-lettering instant)
 * writes nothing. Returns whether a row was written.
 */
export async function recordDeadLetter(sql: Sql, letter: DeadLetter): Promise<boolean> {
  const eventId = UUID.test(letter.eventId) ? letter.eventId : null;
  const deadLetteredAt = Number.isNaN(Date.parse(letter.deadLetteredAt)) ? null : letter.deadLetteredAt;
  const rows = await sql`
    insert into dead_letter_audit (consumer, message_id, event_id, routing_key, error, attempts, deliveries, body, headers, dead_lettered_at)
    values (${letter.consumer}, ${letter.eventId}, ${eventId}, ${letter.routingKey}, ${letter.error}, ${count(letter.attempts)}, ${count(letter.deliveries)},
            ${letter.body}, ${JSON.stringify(letter.headers)}::text::jsonb, coalesce(${deadLetteredAt}::timestamptz, now()))
    on conflict on constraint dead_letter_audit_once do nothing
    returning 1`;
  return rows.length > 0;
}

/** A count from a transport header: a non-negative whole number, else 0. */
function count(value: number): number {
  return Math.max(0, Math.trunc(value) || 0);
}

export interface AuditQuery {
  readonly eventType?: string;
  readonly since?: Date;
  readonly limit: number;
}

/** Audit rows, newest first (by `received_at`, then id), at most `limit`. */
export async function listAudit(sql: Sql, query: AuditQuery): Promise<AuditRow[]> {
  const rows = await sql<{ id: string; event_id: string; event_type: string; aggregate_type: string; aggregate_id: string; source: string; payload: unknown; headers: Record<string, string>; occurred_at: string; received_at: string }[]>`
    select id::text, event_id::text, event_type, aggregate_type, aggregate_id, source, payload, headers,
           to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at,
           to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as received_at
    from audit_log
    where true
      ${query.eventType === undefined ? sql`` : sql`and event_type = ${query.eventType}`}
      ${query.since === undefined ? sql`` : sql`and received_at >= ${query.since}`}
    order by received_at desc, id desc
    limit ${query.limit}`;
  return rows.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    eventType: r.event_type,
    aggregateType: r.aggregate_type,
    aggregateId: r.aggregate_id,
    source: r.source,
    payload: r.payload,
    headers: r.headers,
    occurredAt: r.occurred_at,
    receivedAt: r.received_at,
  }));
}

/** Dead letters, newest first, at most `limit`. */
export async function listDeadLetters(sql: Sql, limit: number): Promise<DeadLetterRow[]> {
  const rows = await sql<{ id: string; consumer: string; message_id: string; event_id: string | null; routing_key: string; error: string; attempts: number; deliveries: number | null; body: string; headers: Record<string, string>; dead_lettered_at: string; received_at: string }[]>`
    select id::text, consumer, message_id, event_id::text, routing_key, error, attempts, deliveries, body, headers,
           to_char(dead_lettered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as dead_lettered_at,
           to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as received_at
    from dead_letter_audit
    order by received_at desc, id desc
    limit ${limit}`;
  return rows.map((r) => ({
    id: r.id,
    consumer: r.consumer,
    messageId: r.message_id,
    eventId: r.event_id,
    routingKey: r.routing_key,
    error: r.error,
    attempts: r.attempts,
    deliveries: r.deliveries,
    body: r.body,
    headers: r.headers,
    deadLetteredAt: r.dead_lettered_at,
    receivedAt: r.received_at,
  }));
}
