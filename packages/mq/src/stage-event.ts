import { uuidv7, type TransactionSql } from '@craig/db';
import { assertEventFields, payloadJson, type EventInput } from './envelope.ts';
import { InvalidEventError, PayloadTooLargeError } from './errors.ts';

/** Default bound on payload + headers, well under every transport's message limit. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

export interface StageEventOptions {
  /** Bound on the payload and headers as JSON, in bytes; default {@link DEFAULT_MAX_PAYLOAD_BYTES}. */
  readonly maxPayloadBytes?: number;
}

export interface StagedEvent {
  /** The outbox row's id (a bigint, as text). */
  readonly id: string;
  readonly eventId: string;
}

/**
 * Stage an event in the caller's transaction: it is published if and only if that
 * transaction commits. Validates the event and bounds its size before writing anything;
 * a bad event throws `InvalidEventError` or `PayloadTooLargeError` naming the offending value,
 * and a duplicate `eventId` throws `InvalidEventError` (the caller's transaction is then aborted,
 * as with any failed statement).
 */
export async function stageEvent(tx: TransactionSql, event: EventInput, options: StageEventOptions = {}): Promise<StagedEvent> {
  const limit = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  // Time-ordered by default: the unique event_id index takes each new entry (and the drain's
  // stamp, each new version's) next to the last one, not on a random leaf (ADR-082).
  const eventId = event.eventId ?? uuidv7();
  const headers = event.headers ?? {};
  assertEventFields({ eventId, aggregateType: event.aggregateType, aggregateId: event.aggregateId, eventType: event.eventType, headers });
  const payload = payloadJson(event.payload);
  const headersJson = JSON.stringify(headers);
  const bytes = Buffer.byteLength(payload) + Buffer.byteLength(headersJson);
  if (bytes > limit) throw new PayloadTooLargeError(bytes, limit, event.eventType);
  try {
    // ::text first: the parameter is our JSON text, sent as is (a jsonb-typed parameter would be
    // JSON-encoded again by the driver).
    const [row] = await tx<{ id: string }[]>`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
      values (${eventId}, ${event.aggregateType}, ${event.aggregateId}, ${event.eventType}, ${payload}::text::jsonb, ${headersJson}::text::jsonb)
      returning id::text`;
    return { id: row!.id, eventId };
  } catch (error) {
    if ((error as { code?: string; constraint_name?: string }).constraint_name === 'event_outbox_event_id_key') {
      throw new InvalidEventError('eventId', eventId, 'was already staged', error);
    }
    throw error;
  }
}
