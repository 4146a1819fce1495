import type { ChannelModel, ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { Logger } from 'pino';
import type { CloseOptions, Subscription } from '../transport.ts';
import { InFlight } from './in-flight.ts';
import { sleep } from './sleep.ts';

/** Header names the RabbitMQ transport owns. */
export const H = {
  attempt: 'x-craig-attempt',
  routingKey: 'x-craig-routing-key',
  consumer: 'x-craig-consumer',
  error: 'x-craig-error',
  attempts: 'x-craig-attempts',
  /** Hand-outs of the message before this copy was published (a dead letter: in all). */
  deliveries: 'x-craig-deliveries',
  deadLetteredAt: 'x-craig-dead-lettered-at',
} as const;

export const MAX_ERROR_TEXT = 4096;

export interface QueueSpec {
  readonly queue: string;
  readonly consumer: string;
  readonly prefetch: number;
  /** Declare the queue and its bindings on a fresh channel. */
  readonly declare: (channel: ConfirmChannel) => Promise<void>;
  readonly retryDelayMs: (attempt: number) => number;
}

/**
 * One consumer on one queue, re-attached on every reconnect. A failed handler's message is
 * republished (confirmed) with the next attempt number, or to the dead-letter exchange with its
 * error past the cap, and only then acknowledged: a crash in between duplicates, never loses.
 * The event subscription and the dead-letter subscription are in files of their own.
 */
export abstract class RabbitSubscription implements Subscription {
  private channel: ConfirmChannel | undefined;
  private attaching: Promise<void> | undefined;
  private consumerTag: string | undefined;
  private closed = false;
  private readonly inFlight = new InFlight();
  private readonly stop = new AbortController();

  constructor(
    protected readonly spec: QueueSpec,
    protected readonly logger: Logger,
    private readonly onClosed: (sub: RabbitSubscription) => void,
    /** The transport's live connection, if any. */
    private readonly currentModel: () => ChannelModel | undefined,
  ) {}

  get consumer(): string {
    return this.spec.consumer;
  }

  /** Open a channel on the (new) connection and start consuming (once: concurrent calls share one attempt). */
  attach(model: ChannelModel): Promise<void> {
    this.attaching ??= this.open(model).finally(() => (this.attaching = undefined));
    return this.attaching;
  }

  private async open(model: ChannelModel): Promise<void> {
    if (this.closed || this.channel) return;
    const channel = await model.createConfirmChannel();
    if (this.closed) return void (await channel.close().catch(() => {}));
    channel.on('error', (error: Error) => this.logger.warn({ err: error, consumer: this.consumer }, 'consumer channel error'));
    channel.on('close', () => {
      if (this.channel !== channel) return;
      this.channel = undefined;
      // Closed by a channel error while the connection lives on: consume again on a new
      // channel (a lost connection re-attaches through the transport's reconnect instead).
      if (!this.closed) setTimeout(() => void this.reattach(), 500).unref();
    });
    await channel.prefetch(this.spec.prefetch);
    await this.spec.declare(channel);
    this.channel = channel;
    const { consumerTag } = await channel.consume(this.spec.queue, (msg) => {
      if (msg === null) {
        // Cancelled by the broker (its queue was deleted, say): start over on a new channel,
        // which declares the queue and its bindings again.
        this.logger.warn({ consumer: this.consumer, queue: this.spec.queue }, 'consumer cancelled by the broker; re-attaching');
        void channel.close().catch(() => {});
        return;
      }
      this.dispatch(channel, msg);
    });
    this.consumerTag = consumerTag;
    if (this.closed) await channel.close().catch(() => {});
  }

  private async reattach(): Promise<void> {
    const model = this.currentModel();
    if (this.closed || this.channel || !model) return;
    await this.attach(model).catch((error: unknown) => this.logger.warn({ err: error, consumer: this.consumer }, 'could not re-open the consumer channel'));
  }

  async close(options: CloseOptions = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
    const channel = this.channel;
    this.channel = undefined;
    // Stop deliveries first, then let the handlers in flight finish (or not), then drop the
    // channel: whatever is still unacknowledged goes back to the queue for another instance.
    if (channel && this.consumerTag) await channel.cancel(this.consumerTag).catch(() => {});
    await this.inFlight.idle(options.graceMs ?? 10_000);
    this.stop.abort();
    await channel?.close().catch(() => {});
  }

  /** A message arrived on `channel`: handle it (a subclass may first do something else with it). */
  protected dispatch(channel: ConfirmChannel, msg: ConsumeMessage): void {
    void this.track(this.handle(channel, msg));
  }

  /** Count `work` as in flight, so a close waits for it. */
  protected track(work: Promise<void>): Promise<void> {
    return this.inFlight.track(work);
  }

  protected get closing(): boolean {
    return this.closed;
  }

  protected abstract run(msg: ConsumeMessage): Promise<void>;
  /** What to do when `run` failed: publish a retry or a dead letter (and return true), or requeue (false). */
  protected abstract onFailure(channel: ConfirmChannel, msg: ConsumeMessage, error: unknown): Promise<boolean>;

  /** Run the handler, then acknowledge: on success, or once its retry or dead letter is published. */
  protected async handle(channel: ConfirmChannel, msg: ConsumeMessage): Promise<void> {
    try {
      await this.run(msg);
    } catch (error) {
      let republished = false;
      try {
        republished = await this.onFailure(channel, msg, error);
      } catch (publishError) {
        this.logger.warn({ err: publishError, consumer: this.consumer }, 'could not republish a failed message; it will be redelivered');
      }
      if (!republished) {
        if (!this.closed) await sleep(this.spec.retryDelayMs(1), this.stop.signal);
        return settle(() => channel.nack(msg, false, true));
      }
    }
    settle(() => channel.ack(msg));
  }

  /** Wait before a retry, unless closing (then the message is left for redelivery). */
  protected pause(ms: number): Promise<boolean> {
    return sleep(ms, this.stop.signal);
  }

  /** Publish on the consuming channel and wait for the broker's confirm. */
  protected confirmPublish(channel: ConfirmChannel, exchange: string, routingKey: string, msg: ConsumeMessage, headers: Record<string, unknown>): Promise<void> {
    const options: Options.Publish = { ...msg.properties, headers, persistent: true };
    return new Promise((resolve, reject) => {
      try {
        channel.publish(exchange, routingKey, msg.content, options, (err: unknown) => (err ? reject(toError(err)) : resolve()));
      } catch (error) {
        reject(toError(error));
      }
    });
  }
}

export function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** Acking or nacking on a channel that closed meanwhile throws; the broker redelivers anyway. */
export function settle(fn: () => void): void {
  try {
    fn();
  } catch {
    // channel gone: the message is requeued by the broker
  }
}

export function headerText(headers: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (value === undefined || value === null) return undefined;
  if (Buffer.isBuffer(value)) return value.toString();
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

export function userHeaders(headers: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (k.startsWith('x-craig-') || k.startsWith('x-death') || k.startsWith('x-first-death') || k.startsWith('x-last-death')) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else if (Buffer.isBuffer(v)) out[k] = v.toString();
  }
  return out;
}
