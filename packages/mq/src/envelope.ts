import { InvalidEventError } from './errors.ts';
import { assertRoutingKey } from './internal/topic.ts';

/** What a service stages: the event as its code sees it. */
export interface EventInput {
  /** A UUID; when absent, a time-ordered UUIDv7 is generated (ADR-082). The dedup key of every consumer's inbox. */
  readonly eventId?: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** Also the routing key: dot-separated words (`case.opened`). */
  readonly eventType: string;
  /** Any JSON value. */
  readonly payload: unknown;
  /** String headers; names starting with `x-craig-` are reserved for the transports. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What travels: the envelope every transport carries as its message body (JSON). */
export interface EventEnvelope {
  readonly eventId: string;
  readonly eventType: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** The service whose outbox published it. */
  readonly source: string;
  /** When the event was staged (the outbox row's `created_at`), ISO 8601. */
  readonly occurredAt: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEADER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_HEADER_VALUE = 1024;
const MAX_AGGREGATE = 200;

export function assertEventId(value: unknown, field = 'eventId'): asserts value is string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new InvalidEventError(field, value, 'must be a UUID');
}

function assertText(field: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_AGGREGATE) {
    throw new InvalidEventError(field, value, `must be a string of 1 to ${MAX_AGGREGATE} characters`);
  }
}

/** Throws `InvalidEventError` unless `headers` is an object of string values with plain names. */
export function assertHeaders(headers: unknown, field = 'headers'): asserts headers is Record<string, string> {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) throw new InvalidEventError(field, headers, 'must be an object of strings');
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new InvalidEventError(`${field}.${name}`, name, 'must be a name of letters, digits, "_", "." or "-" (at most 64)');
    if (name.toLowerCase().startsWith('x-craig-')) throw new InvalidEventError(`${field}.${name}`, name, 'uses the reserved x-craig- prefix');
    if (typeof value !== 'string' || value.length > MAX_HEADER_VALUE) throw new InvalidEventError(`${field}.${name}`, value, `must be a string of at most ${MAX_HEADER_VALUE} characters`);
  }
}

/** The event's own fields, checked. Used when staging and again when draining (a row written by other means). */
export function assertEventFields(event: { eventId: unknown; aggregateType: unknown; aggregateId: unknown; eventType: unknown; headers: unknown }): void {
  assertEventId(event.eventId);
  assertText('aggregateType', event.aggregateType);
  assertText('aggregateId', event.aggregateId);
  assertRoutingKey(event.eventType);
  assertHeaders(event.headers);
}

/** `JSON.stringify`, refusing what JSON or jsonb cannot hold. */
export function payloadJson(payload: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch (cause) {
    throw new InvalidEventError('payload', '[unserializable]', `is not JSON-serializable: ${(cause as Error).message}`, cause);
  }
  if (json === undefined) throw new InvalidEventError('payload', payload, 'must be a JSON value (not undefined, a function or a symbol)');
  // jsonb refuses the NUL character; refuse it here with a clear error rather than a driver one.
  if (json.includes('\\u0000')) throw new InvalidEventError('payload', '[contains NUL]', 'must not contain the NUL character (\\u0000)');
  return json;
}

/**
 * The wire body for an outbox row. The payload and headers arrive as jsonb text and are
 * spliced in unparsed: the drain never round-trips a payload through JavaScript objects.
 */
export function encodeEnvelope(row: {
  eventId: string;
  eventType: string;
  aggregateType: string;
  aggregateId: string;
  source: string;
  occurredAt: string;
  headersJson: string;
  payloadJson: string;
}): string {
  return (
    `{"eventId":${JSON.stringify(row.eventId)},"eventType":${JSON.stringify(row.eventType)},` +
    `"aggregateType":${JSON.stringify(row.aggregateType)},"aggregateId":${JSON.stringify(row.aggregateId)},` +
    `"source":${JSON.stringify(row.source)},"occurredAt":${JSON.stringify(row.occurredAt)},` +
    `"headers":${row.headersJson},"payload":${row.payloadJson}}`
  );
}

/** Parse and check a message body. Throws `InvalidEventError` naming what is wrong. */
export function decodeEnvelope(body: string): EventEnvelope {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (cause) {
    throw new InvalidEventError('body', body, 'is not JSON', cause);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidEventError('body', body, 'is not an envelope object');
  const e = parsed as Record<string, unknown>;
  assertEventFields({ eventId: e.eventId, aggregateType: e.aggregateType, aggregateId: e.aggregateId, eventType: e.eventType, headers: e.headers });
  if (typeof e.source !== 'string' || e.source.length === 0) throw new InvalidEventError('source', e.source, 'must be a non-empty string');
  if (typeof e.occurredAt !== 'string' || Number.isNaN(Date.parse(e.occurredAt))) throw new InvalidEventError('occurredAt', e.occurredAt, 'must be an ISO 8601 timestamp');
  if (!('payload' in e)) throw new InvalidEventError('payload', undefined, 'is missing');
  return e as unknown as EventEnvelope;
}
