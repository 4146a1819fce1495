import { InvalidEventError } from './errors.ts';

/** One message to publish: the encoded envelope and its routing key. */
export interface OutgoingMessage {
  readonly eventId: string;
  /** Topic routing key (the event type). */
  readonly routingKey: string;
  /** The encoded envelope (JSON). */
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What happened to one published message. `unavailable`: the transport could not be reached
 * (nothing is the message's fault; retry later without counting it). `rejected`: the transport
 * took the message and refused or failed it (a nack, a channel error while it was in flight).
 * `too_large`: over `maxMessageBytes`, refused before sending; retrying cannot help.
 */
export type PublishOutcome = { readonly ok: true } | { readonly ok: false; readonly kind: 'unavailable' | 'rejected' | 'too_large'; readonly error: Error };

/**
 * A message handed to a consumer's handler. Every hand-out is a *delivery*, whatever the handler
 * then does: resolve (acknowledged), throw (a failed attempt, retried under `maxRetries`), or
 * never finish because its process died or it timed out (unacknowledged: counted against
 * `maxDeliveries`).
 */
export interface Delivery {
  readonly consumer: string;
  readonly eventId: string;
  readonly routingKey: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  /**
   * 1 for the first handler attempt; each attempt that threw is retried with the next number.
   * A delivery whose consumer died (or timed out) holding it is not an attempt: the next
   * instance gets the same number, and `deliveries` counts it instead.
   */
  readonly attempt: number;
  /**
   * Which hand-out of this message this is, 1 for the first: every delivery so far, over all
   * attempts, counted in a committed record before the handler runs (the bus) or when the
   * broker hands an unacknowledged message out again (RabbitMQ).
   */
  readonly deliveries: number;
  /** The message was handed out before (`deliveries > 1`): a failed attempt, or a consumer that died holding it. */
  readonly redelivered: boolean;
}

/**
 * A message a consumer gave up on: past its retries (the last error), not an envelope at all,
 * or delivered `maxDeliveries` times without an acknowledgement (its consumer died or timed out
 * each time; the error says so and the handler was not run again).
 */
export interface DeadLetter {
  /** The consumer that gave up. */
  readonly consumer: string;
  readonly eventId: string;
  readonly routingKey: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly error: string;
  /** The handler attempt it got to: the attempts that threw, plus the one that gave up or kept dying. */
  readonly attempts: number;
  /**
   * Times it was handed to a handler, over all attempts. A message RabbitMQ dead-lettered
   * itself (a queue policy's TTL or length limit) carries the hand-outs recorded on it, 0 when
   * none; a bus dead letter from before the count carries its attempts.
   */
  readonly deliveries: number;
  readonly deadLetteredAt: string;
}

export interface SubscribeOptions {
  /** Durable consumer name (`[a-z][a-z0-9_.-]*`): its queue outlives the process. */
  readonly consumer: string;
  /** Topic patterns: `*` is one word, `#` zero or more (`case.*`, `#`). */
  readonly patterns: readonly string[];
  /** Retries after a failed first attempt; past them the message is dead-lettered with its error. */
  readonly maxRetries: number;
  /**
   * Deliveries without an acknowledgement (the handler never resolved nor threw: its process
   * died, or it timed out) after which the message is dead-lettered instead of being handed out
   * again; default {@link DEFAULT_MAX_DELIVERIES}. Independent of `maxRetries`: an attempt that
   * threw is settled, so it does not count here, and a death does not use up a retry.
   */
  readonly maxDeliveries?: number;
  /** Handlers in flight at once for this subscription; default 8 (1 handles in order). */
  readonly prefetch?: number;
  /** Delay before retry `attempt + 1`; default 100 ms doubling to 5 s. */
  readonly retryDelayMs?: (attempt: number) => number;
}

export interface DeadLetterSubscribeOptions {
  readonly prefetch?: number;
  /** Delay before a failed dead-letter handler sees the message again (dead letters are never dropped). */
  readonly retryDelayMs?: (attempt: number) => number;
}

export interface CloseOptions {
  /** How long to wait for handlers in flight before dropping the connection; default 10 s. 0 drops at once. */
  readonly graceMs?: number;
}

export interface Subscription {
  readonly consumer: string;
  /**
   * Stop taking messages and wait (up to `graceMs`) for the handlers in flight. Anything still
   * unacknowledged is released and redelivered to another instance of the consumer.
   */
  close(options?: CloseOptions): Promise<void>;
}

/**
 * A topic-routed, at-least-once message transport. Both implementations (RabbitMQ and the
 * PostgreSQL bus) pass the same contract suite (test/transport-contract.ts):
 * publish/consume, fan-out to every bound consumer, redelivery of what a dead consumer held,
 * retries then a dead letter with the error, a dead letter instead of delivery number
 * `maxDeliveries + 1` of a message no consumer ever acknowledged (without taking the messages
 * that were in flight beside it along), consuming the dead letters, topic patterns, and
 * refusal of oversize messages.
 */
export interface Transport {
  readonly kind: 'rabbitmq' | 'postgres';
  /** Largest encoded message it carries, in bytes. */
  readonly maxMessageBytes: number;
  /** Publish in order; resolves once each message is durably accepted or has failed. Never throws for a message's fault. */
  publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]>;
  /** Bind the consumer's durable queue to the patterns and start handling. A handler that resolves acknowledges. */
  subscribe(options: SubscribeOptions, handler: (delivery: Delivery) => Promise<void>): Promise<Subscription>;
  /** Consume the fleet's dead letters (the security service's audit). */
  subscribeDeadLetters(options: DeadLetterSubscribeOptions, handler: (deadLetter: DeadLetter) => Promise<void>): Promise<Subscription>;
  /** Dead letters waiting to be consumed. */
  deadLetterCount(): Promise<number>;
  /** Close every subscription (see `Subscription.close`) and the connections. */
  close(options?: CloseOptions): Promise<void>;
}

/** Default unacknowledged deliveries before a dead letter (INBOX_MAX_DELIVERIES). */
export const DEFAULT_MAX_DELIVERIES = 5;
/** Default handlers in flight per subscription. */
export const DEFAULT_PREFETCH = 8;
/** Default transport message limit: 1 MiB, four times the default staged payload bound. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

const CONSUMER = /^[a-z][a-z0-9_.-]{0,99}$/;

export function assertConsumerName(consumer: unknown): asserts consumer is string {
  if (typeof consumer !== 'string' || !CONSUMER.test(consumer)) {
    throw new InvalidEventError('consumer', consumer, 'must be lower-case letters, digits, "_", "." or "-", starting with a letter (at most 100)');
  }
}

/** The retry and delivery bounds of a subscription, checked: a `RangeError` naming the value. */
export function assertDeliveryBounds(options: Pick<SubscribeOptions, 'maxRetries' | 'maxDeliveries'>): { readonly maxRetries: number; readonly maxDeliveries: number } {
  const { maxRetries, maxDeliveries = DEFAULT_MAX_DELIVERIES } = options;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new RangeError(`maxRetries must be a non-negative integer: ${maxRetries}`);
  if (!Number.isInteger(maxDeliveries) || maxDeliveries < 1) throw new RangeError(`maxDeliveries must be a positive integer: ${maxDeliveries}`);
  return { maxRetries, maxDeliveries };
}

/** The dead letter's error when a message was delivered `deliveries` times and never acknowledged. */
export function deliveryLimitError(deliveries: number): string {
  return `delivered ${deliveries} times without an acknowledgement: its consumer died or timed out each time`;
}

/** 100 ms, doubling, at most 5 s. */
export function defaultRetryDelayMs(attempt: number): number {
  return Math.min(5000, 100 * 2 ** Math.max(0, attempt - 1));
}
