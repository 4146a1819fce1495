import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import { InvalidEventError } from '../errors.ts';
import { deliveryLimitError, type Delivery } from '../transport.ts';
import { InFlight } from './in-flight.ts';
import { H, headerText, MAX_ERROR_TEXT, RabbitSubscription, settle, userHeaders, type QueueSpec } from './rabbitmq-subscription.ts';

export interface EventSubscriptionOptions {
  readonly dlx: string;
  readonly maxRetries: number;
  readonly maxDeliveries: number;
  readonly handler: (delivery: Delivery) => Promise<void>;
}

/** What the headers of one copy of a message say about it. */
interface Copy {
  readonly attempt: number;
  /** Hand-outs of the message before this copy was published (`x-craig-deliveries`). */
  readonly before: number;
  readonly routingKey: string;
}

function positive(text: string | undefined, fallback: number, min: number): number {
  const n = Number(text ?? fallback);
  return Number.isInteger(n) && n >= min ? n : fallback;
}

/**
 * A consumer's subscription: handler, retries, dead letter, and the delivery count.
 *
 * A classic queue knows one bit of a message's delivery history: `redelivered`, set when the
 * broker hands out again a message it handed out before and never got an acknowledgement for
 * (its consumer died, its channel or connection closed, it outlived the broker's consumer
 * timeout). The count lives on the message instead: such a copy is never handed to the
 * handler. It is re-published (confirmed) to the queue with `x-craig-deliveries` one higher
 * and only then acknowledged, or, once `maxDeliveries` hand-outs went unsettled, published to
 * the dead-letter exchange with an error saying so. The count is committed in the broker
 * before the next hand-out, needs no queue arguments (existing queues, any queue type, any
 * INBOX_MAX_DELIVERIES), and costs nothing on the happy path. See docs/adr/062-delivery-limit.md.
 *
 * An attempt that throws is settled (its retry carries the hand-out in `x-craig-deliveries`
 * and the next attempt number), so `before - (attempt - 1)` is the number of hand-outs no
 * consumer settled. A copy with any is a *suspect*: it is handed out alone. Deliveries that
 * arrive meanwhile are put back (re-published unchanged, then acknowledged) before it runs and
 * a channel-wide prefetch of 1 holds the rest back until it settled, so when it kills its consumer again
 * the other messages are not counted with it (they were not in flight).
 */
export class EventSubscription extends RabbitSubscription {
  /** The channel a suspect is being handled alone on. */
  private alone: ConfirmChannel | undefined;
  /** Handlers, re-publications and put-backs in flight (not a suspect's own run). */
  private readonly busy = new InFlight();

  constructor(
    spec: QueueSpec,
    logger: Logger,
    onClosed: (sub: RabbitSubscription) => void,
    currentModel: () => ChannelModel | undefined,
    private readonly options: EventSubscriptionOptions,
  ) {
    super(spec, logger, onClosed, currentModel);
  }

  protected override dispatch(channel: ConfirmChannel, msg: ConsumeMessage): void {
    const copy = this.copy(msg);
    let work: Promise<void>;
    if (msg.fields.redelivered) work = this.busy.track(this.recount(channel, msg, copy));
    else if (this.alone === channel) work = this.busy.track(this.putBack(channel, msg, copy));
    else if (copy.before - (copy.attempt - 1) > 0 && this.spec.prefetch > 1) work = this.handleAlone(channel, msg);
    else work = this.busy.track(this.handle(channel, msg));
    void this.track(work);
  }

  private copy(msg: ConsumeMessage): Copy {
    const headers = msg.properties.headers;
    return {
      attempt: positive(headerText(headers, H.attempt), 1, 1),
      before: positive(headerText(headers, H.deliveries), 0, 0),
      routingKey: headerText(headers, H.routingKey) ?? msg.fields.routingKey,
    };
  }

  private delivery(msg: ConsumeMessage): Delivery {
    const copy = this.copy(msg);
    return {
      consumer: this.consumer,
      eventId: String(msg.properties.messageId ?? ''),
      routingKey: copy.routingKey,
      body: msg.content.toString(),
      headers: userHeaders(msg.properties.headers),
      attempt: copy.attempt,
      deliveries: copy.before + 1,
      redelivered: copy.before > 0,
    };
  }

  /**
   * A copy the broker handed out before without an acknowledgement: it was handed to a handler
   * (copies are only ever handed out the first time they arrive), so count that hand-out. Never
   * run the handler on it: re-publish it with the count, or dead-letter it.
   */
  private async recount(channel: ConfirmChannel, msg: ConsumeMessage, copy: Copy): Promise<void> {
    const deliveries = copy.before + 1;
    const base = { ...(msg.properties.headers ?? {}), [H.routingKey]: copy.routingKey, [H.deliveries]: deliveries };
    try {
      if (deliveries - (copy.attempt - 1) >= this.options.maxDeliveries) {
        await this.deadLetter(channel, msg, copy, base, deliveryLimitError(deliveries), deliveries);
      } else {
        await this.confirmPublish(channel, '', this.spec.queue, msg, base);
      }
    } catch (error) {
      // Not recorded: it comes back redelivered and is counted then.
      this.logger.warn({ err: error, consumer: this.consumer }, 'could not re-publish a redelivered message with its delivery count; it will be redelivered');
      return settle(() => channel.nack(msg, false, true));
    }
    settle(() => channel.ack(msg));
  }

  /** A delivery that arrived while a suspect is handled alone: to the queue's tail, unchanged and unhanded. */
  private async putBack(channel: ConfirmChannel, msg: ConsumeMessage, copy: Copy): Promise<void> {
    try {
      await this.confirmPublish(channel, '', this.spec.queue, msg, { ...(msg.properties.headers ?? {}), [H.routingKey]: copy.routingKey });
    } catch (error) {
      this.logger.warn({ err: error, consumer: this.consumer }, 'could not put a message back; it will be redelivered');
      return settle(() => channel.nack(msg, false, true));
    }
    settle(() => channel.ack(msg));
  }

  /** Hand a suspect out with nothing else of this subscription in flight. */
  private async handleAlone(channel: ConfirmChannel, msg: ConsumeMessage): Promise<void> {
    this.alone = channel;
    try {
      // A channel-wide limit of 1 on top of the consumer's own (a per-consumer prefetch cannot
      // be changed once consuming). Once the broker confirms it, every delivery it sent before
      // has been dispatched (frames arrive in order), so put back; and it sends nothing more
      // while this one is unacknowledged.
      await channel.prefetch(1, true);
      await this.busy.settled();
    } catch (error) {
      // The channel closed: the broker requeues it (and counts it, one more than it was handed).
      this.logger.warn({ err: error, consumer: this.consumer }, 'could not hand a suspect message out alone; it will be redelivered');
      if (this.alone === channel) this.alone = undefined;
      return;
    }
    try {
      await this.handle(channel, msg);
    } finally {
      // Synchronously after the acknowledgement: the next delivery is dispatched as usual.
      if (this.alone === channel) {
        this.alone = undefined;
        if (!this.closing) channel.prefetch(0, true).catch(() => {});
      }
    }
  }

  protected run(msg: ConsumeMessage): Promise<void> {
    return this.options.handler(this.delivery(msg));
  }

  protected async onFailure(channel: ConfirmChannel, msg: ConsumeMessage, error: unknown): Promise<boolean> {
    const copy = this.copy(msg);
    // This hand-out is settled by the failure: its count travels with the retry or the dead letter.
    const deliveries = copy.before + 1;
    const base = { ...(msg.properties.headers ?? {}), [H.routingKey]: copy.routingKey, [H.deliveries]: deliveries };
    // A message the handler can never accept (not an envelope) is dead-lettered at once.
    const permanent = error instanceof InvalidEventError;
    if (permanent || copy.attempt > this.options.maxRetries) {
      await this.deadLetter(channel, msg, copy, base, (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_TEXT), deliveries, error);
      return true;
    }
    if (!(await this.pause(this.spec.retryDelayMs(copy.attempt)))) return false;
    // To the tail of this consumer's own queue (default exchange), with the next attempt number.
    await this.confirmPublish(channel, '', this.spec.queue, msg, { ...base, [H.attempt]: copy.attempt + 1 });
    return true;
  }

  private async deadLetter(channel: ConfirmChannel, msg: ConsumeMessage, copy: Copy, base: Record<string, unknown>, error: string, deliveries: number, cause?: unknown): Promise<void> {
    await this.confirmPublish(channel, this.options.dlx, copy.routingKey, msg, {
      ...base,
      [H.consumer]: this.consumer,
      [H.error]: error,
      [H.attempts]: copy.attempt,
      [H.deliveries]: deliveries,
      [H.deadLetteredAt]: new Date().toISOString(),
    });
    const eventId = String(msg.properties.messageId ?? '');
    this.logger.warn({ consumer: this.consumer, eventId, attempts: copy.attempt, deliveries, ...(cause === undefined ? { error } : { err: cause }) }, 'message dead-lettered');
  }
}
