/** Base of this package's errors: a stable `code`, `retryable`, the offending values as fields, and `cause`. */
export class MqError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** An event (or a topic pattern) that does not meet the envelope rules; names the field and the value. */
export class InvalidEventError extends MqError {
  constructor(
    readonly field: string,
    readonly value: unknown,
    reason: string,
    cause?: unknown,
  ) {
    super('invalid_event', `invalid event: ${field} ${reason} (got ${preview(value)})`, { cause });
  }
}

/** A payload larger than the configured bound, refused before it is staged. */
export class PayloadTooLargeError extends MqError {
  constructor(
    readonly bytes: number,
    readonly limit: number,
    readonly eventType: string,
  ) {
    super('payload_too_large', `event ${eventType}: payload and headers are ${bytes} bytes, more than the ${limit}-byte limit`);
  }
}

/** A transport refused to carry an encoded message larger than its limit. */
export class MessageTooLargeError extends MqError {
  constructor(
    readonly bytes: number,
    readonly limit: number,
    readonly eventId: string,
  ) {
    super('message_too_large', `message ${eventId} is ${bytes} bytes, more than the transport's ${limit}-byte limit`);
  }
}

/** The broker or bus database cannot be reached right now. Nothing is counted against the message. */
export class TransportUnavailableError extends MqError {
  constructor(message: string, cause?: unknown) {
    super('transport_unavailable', message, { retryable: true, cause });
  }
}

/** The transport took a message but refused or failed it (a nack, a channel error). Counted as an attempt. */
export class PublishRejectedError extends MqError {
  constructor(
    readonly eventId: string,
    message: string,
    cause?: unknown,
  ) {
    super('publish_rejected', `message ${eventId}: ${message}`, { retryable: true, cause });
  }
}

/**
 * A replay reaching further back than the dedup horizon: a consumer may already have pruned
 * the record that would make the redelivery harmless. Carries the boundary (services answer 400).
 */
export class ReplayOutOfWindowError extends MqError {
  constructor(
    readonly from: string,
    readonly horizon: string,
    readonly outboxDays: number,
    readonly inboxDays: number,
  ) {
    super(
      'replay_out_of_window',
      `replay from ${from} reaches past the replay horizon ${horizon} (outbox window ${outboxDays} d, inbox window ${inboxDays} d): events older than that may no longer be deduplicated by their consumers`,
    );
  }
}

/** A replay range that is not a range: unparsable bounds, or `from` not before `to`. */
export class InvalidReplayRangeError extends MqError {
  constructor(
    readonly from: unknown,
    readonly to: unknown,
    reason: string,
  ) {
    super('invalid_replay_range', `invalid replay range from ${preview(from)} to ${preview(to)}: ${reason}`);
  }
}

/** A redrive id that is not an outbox row id (a whole number from 1 to 2^63 - 1); names it. */
export class InvalidRedriveIdError extends MqError {
  constructor(readonly id: unknown) {
    super('invalid_redrive_id', `redrive id ${preview(id)} is not an outbox row id (a whole number from 1 to 9223372036854775807)`);
  }
}

function preview(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
