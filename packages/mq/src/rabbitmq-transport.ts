import { once } from 'node:events';
import { connect, type ChannelModel, type ConfirmChannel, type RecoveringChannelModel } from 'amqplib';
import pino, { type Logger } from 'pino';
import { MessageTooLargeError, PublishRejectedError, TransportUnavailableError } from './errors.ts';
import { DeadLetterSubscription } from './internal/rabbitmq-dead-letter-subscription.ts';
import { EventSubscription } from './internal/rabbitmq-event-subscription.ts';
import type { QueueSpec, RabbitSubscription } from './internal/rabbitmq-subscription.ts';
import { sleep } from './internal/sleep.ts';
import { assertRoutingKey, assertTopicPattern } from './internal/topic.ts';
import {
  assertConsumerName,
  assertDeliveryBounds,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PREFETCH,
  defaultRetryDelayMs,
  type CloseOptions,
  type DeadLetter,
  type DeadLetterSubscribeOptions,
  type Delivery,
  type OutgoingMessage,
  type PublishOutcome,
  type SubscribeOptions,
  type Subscription,
  type Transport,
} from './transport.ts';

export interface RabbitMqTransportOptions {
  readonly url: string;
  /** The topic exchange events are published to (settings: AMQP_EXCHANGE). */
  readonly exchange: string;
  /** Shown as the connection name in the broker. */
  readonly service: string;
  readonly maxMessageBytes?: number;
  /**
   * How long a publish waits for its next confirm: a batch whose confirms stop coming for this
   * long counts its unconfirmed messages as unavailable. A broker that confirms slowly but
   * steadily is waited for, however large the batch. Default 10 s.
   */
  readonly publishTimeoutMs?: number;
  /** How long creating the transport waits for the first connection (it keeps trying after). Default 10 s. */
  readonly connectTimeoutMs?: number;
  /** Reconnect backoff: exponential with jitter from `initialDelayMs` up to `maxDelayMs`. */
  readonly reconnect?: { readonly initialDelayMs?: number; readonly maxDelayMs?: number };
  readonly logger?: Logger;
}

/**
 * RabbitMQ: a durable topic exchange, publisher confirms, one durable queue per consumer
 * (`<exchange>.<consumer>`) whose dead letters go to the fanout `<exchange>.dlx` and its queue
 * `<exchange>.dead-letter`. The connection recovers by itself with backoff; subscriptions are
 * re-attached on every reconnect. While it is down, publish reports `unavailable` at once.
 */
export async function createRabbitMqTransport(options: RabbitMqTransportOptions): Promise<Transport> {
  assertRoutingKey(options.exchange, 'exchange');
  const transport = new RabbitMqTransport(options);
  await transport.start();
  return transport;
}

/** Resolves on the channel's next 'drain' or 'close', whichever comes first. */
function drained(channel: ConfirmChannel): Promise<void> {
  const controller = new AbortController();
  const { signal } = controller;
  return Promise.race([once(channel, 'drain', { signal }), once(channel, 'close', { signal })])
    .catch(() => undefined)
    .then(() => controller.abort());
}

class RabbitMqTransport implements Transport {
  readonly kind = 'rabbitmq' as const;
  readonly maxMessageBytes: number;
  private readonly logger: Logger;
  private readonly exchange: string;
  private readonly dlx: string;
  private readonly dlq: string;
  private model: RecoveringChannelModel | undefined;
  private current: ChannelModel | undefined;
  private publishChannel: Promise<{ channel: ConfirmChannel; error?: Error }> | undefined;
  private readonly subscriptions = new Set<RabbitSubscription>();
  private sendTail: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: RabbitMqTransportOptions) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.logger = options.logger ?? pino({ level: 'silent' });
    this.exchange = options.exchange;
    this.dlx = `${options.exchange}.dlx`;
    this.dlq = `${options.exchange}.dead-letter`;
  }

  async start(): Promise<void> {
    const model = await connect(this.options.url, {
      clientProperties: { connection_name: `${this.options.service}:craig-mq` },
      recovery: {
        initialDelay: this.options.reconnect?.initialDelayMs ?? 100,
        maxDelay: this.options.reconnect?.maxDelayMs ?? 30_000,
        waitForConnect: false,
        setup: (m: ChannelModel) => this.declareTopology(m),
      },
    });
    this.model = model;
    model.on('connect', (m: ChannelModel) => {
      this.current = m;
      this.logger.info({ exchange: this.exchange }, 'connected to RabbitMQ');
      for (const sub of this.subscriptions) {
        sub.attach(m).catch((error: unknown) => this.logger.warn({ err: error, consumer: sub.consumer }, 'could not re-attach a consumer'));
      }
    });
    model.on('disconnect', (error: Error) => {
      this.current = undefined;
      this.publishChannel = undefined;
      this.logger.warn({ err: error }, 'RabbitMQ connection lost; reconnecting');
    });
    model.on('reconnect-scheduled', (info: { attempt: number; delay: number; error: Error }) => {
      this.logger.warn({ attempt: info.attempt, delayMs: info.delay, err: info.error }, 'RabbitMQ reconnect scheduled');
    });
    model.on('error', (error: Error) => this.logger.warn({ err: error }, 'RabbitMQ connection error'));
    const timer = new AbortController();
    await Promise.race([model.waitForConnect().catch(() => undefined), sleep(this.options.connectTimeoutMs ?? 10_000, timer.signal)]);
    timer.abort();
  }

  private async declareTopology(model: ChannelModel): Promise<void> {
    const channel = await model.createChannel();
    try {
      await channel.assertExchange(this.exchange, 'topic', { durable: true });
      await channel.assertExchange(this.dlx, 'fanout', { durable: true });
      await channel.assertQueue(this.dlq, { durable: true });
      await channel.bindQueue(this.dlq, this.dlx, '');
    } finally {
      await channel.close().catch(() => {});
    }
  }

  /** The confirm channel publishes go through, opened on first use after each (re)connect. */
  private confirmChannel(model: ChannelModel): Promise<{ channel: ConfirmChannel; error?: Error }> {
    this.publishChannel ??= (async () => {
      const state: { channel: ConfirmChannel; error?: Error } = { channel: await model.createConfirmChannel() };
      // A channel-level exception (the broker refusing something we sent) arrives as 'error'
      // before 'close' and before the unconfirmed callbacks fail: it marks them rejected, not
      // unavailable.
      state.channel.on('error', (error: Error) => {
        state.error = error;
        this.logger.warn({ err: error }, 'publish channel closed by the broker');
      });
      state.channel.on('close', () => {
        if (this.publishChannel === current) this.publishChannel = undefined;
      });
      return state;
    })();
    const current = this.publishChannel;
    current.catch(() => {
      if (this.publishChannel === current) this.publishChannel = undefined;
    });
    return current;
  }

  async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const outcomes: PublishOutcome[] = new Array(messages.length);
    const sendable: number[] = [];
    messages.forEach((m, i) => {
      const bytes = Buffer.byteLength(m.body);
      if (bytes > this.maxMessageBytes) outcomes[i] = { ok: false, kind: 'too_large', error: new MessageTooLargeError(bytes, this.maxMessageBytes, m.eventId) };
      else sendable.push(i);
    });
    if (sendable.length === 0) return outcomes;
    const unavailable = (error: Error) => {
      for (const i of sendable) outcomes[i] ??= { ok: false, kind: 'unavailable', error };
      return outcomes;
    };
    const model = this.current;
    if (!model || this.closed) return unavailable(new TransportUnavailableError('RabbitMQ is not connected'));
    let state: { channel: ConfirmChannel; error?: Error };
    try {
      state = await this.confirmChannel(model);
    } catch (cause) {
      return unavailable(new TransportUnavailableError('could not open a RabbitMQ channel', cause));
    }
    const { channel } = state;
    const settled: Promise<void>[] = [];
    /** Messages the broker has answered (confirmed, nacked or failed), for the stall timeout. */
    let answered = 0;
    let gaveUp = false;
    let closed = false;
    const onClose = () => (closed = true);
    channel.once('close', onClose);
    try {
      // Concurrent calls (drain lanes) send one after another, whole batches in call order;
      // only the waits for confirms overlap.
      const send = async () => {
        for (const i of sendable) {
          if (closed) break;
          const m = messages[i]!;
          let more = true;
          settled.push(
            new Promise<void>((resolve) => {
              const done = (error: unknown) => {
                answered++;
                // A batch given up on (confirms stalled) was answered already: a late confirm
                // or a failure from the channel's close must not rewrite what its caller has.
                if (gaveUp) return resolve();
                if (!error) outcomes[i] = { ok: true };
                else if (String((error as Error).message) === 'message nacked' || state.error) {
                  outcomes[i] = { ok: false, kind: 'rejected', error: new PublishRejectedError(m.eventId, state.error ? state.error.message : 'nacked by the broker', error) };
                } else {
                  outcomes[i] = { ok: false, kind: 'unavailable', error: new TransportUnavailableError(`RabbitMQ channel closed before confirming ${m.eventId}`, error) };
                }
                resolve();
              };
              try {
                more = channel.publish(
                  this.exchange,
                  m.routingKey,
                  Buffer.from(m.body),
                  { persistent: true, messageId: m.eventId, contentType: 'application/json', ...(m.headers ? { headers: m.headers } : {}) },
                  done,
                );
              } catch (error) {
                // Thrown synchronously: the channel is already closed (unavailable) or the message
                // cannot be encoded (a RangeError for an oversize header table: its own fault).
                if (error instanceof RangeError) {
                  outcomes[i] = { ok: false, kind: 'rejected', error: new PublishRejectedError(m.eventId, error.message, error) };
                  resolve();
                } else done(error);
              }
            }),
          );
          // The channel's write buffer is full: wait for it before publishing more.
          if (!more && !closed) await drained(channel);
        }
      };
      const sending = this.sendTail.then(send);
      this.sendTail = sending.catch(() => undefined);
      await sending;
      const timeoutMs = this.options.publishTimeoutMs ?? 10_000;
      const all = Promise.all(settled).then(() => true);
      // Wait while confirms keep coming: give up only after timeoutMs without a new one.
      for (;;) {
        const before = answered;
        const timer = new AbortController();
        const complete = await Promise.race([all, sleep(timeoutMs, timer.signal).then(() => false)]);
        timer.abort();
        if (complete) break;
        if (answered > before) continue;
        // Confirms that stopped coming: reset the channel so a late confirm cannot be mistaken
        // for a new one, and report the rest unavailable (they may still arrive: at-least-once).
        // The close is not waited for: a broker that stopped answering may never answer it.
        gaveUp = true;
        this.publishChannel = undefined;
        void channel.close().catch(() => {});
        return unavailable(new TransportUnavailableError(`RabbitMQ sent no confirm for ${timeoutMs} ms (${answered} of ${sendable.length} answered)`));
      }
    } finally {
      channel.removeListener('close', onClose);
    }
    unavailable(new TransportUnavailableError('RabbitMQ channel closed while publishing'));
    // A channel error fails every message in flight, not just the one the broker refused.
    // Retry those one at a time so only the culprit is charged an attempt.
    const rejected = sendable.filter((i) => !outcomes[i]!.ok && (outcomes[i] as { kind: string }).kind === 'rejected');
    if (state.error && sendable.length > 1 && rejected.length > 0) {
      for (const i of rejected) outcomes[i] = (await this.publish([messages[i]!]))[0]!;
    }
    return outcomes;
  }

  async subscribe(options: SubscribeOptions, handler: (delivery: Delivery) => Promise<void>): Promise<Subscription> {
    assertConsumerName(options.consumer);
    for (const p of options.patterns) assertTopicPattern(p);
    if (options.patterns.length === 0) throw new RangeError(`consumer ${options.consumer}: at least one pattern is required`);
    const { maxRetries, maxDeliveries } = assertDeliveryBounds(options);
    const queue = `${this.exchange}.${options.consumer}`;
    const spec: QueueSpec = {
      queue,
      consumer: options.consumer,
      prefetch: options.prefetch ?? DEFAULT_PREFETCH,
      retryDelayMs: options.retryDelayMs ?? defaultRetryDelayMs,
      declare: async (channel) => {
        await channel.assertQueue(queue, { durable: true, deadLetterExchange: this.dlx });
        for (const pattern of options.patterns) await channel.bindQueue(queue, this.exchange, pattern);
      },
    };
    const sub = new EventSubscription(spec, this.logger, (s) => this.subscriptions.delete(s), () => this.current, { dlx: this.dlx, maxRetries, maxDeliveries, handler });
    return this.attach(sub);
  }

  async subscribeDeadLetters(options: DeadLetterSubscribeOptions, handler: (deadLetter: DeadLetter) => Promise<void>): Promise<Subscription> {
    const spec: QueueSpec = {
      queue: this.dlq,
      consumer: 'dead-letter',
      prefetch: options.prefetch ?? DEFAULT_PREFETCH,
      retryDelayMs: options.retryDelayMs ?? defaultRetryDelayMs,
      declare: async () => {},
    };
    const sub = new DeadLetterSubscription(spec, this.logger, (s) => this.subscriptions.delete(s), () => this.current, `${this.exchange}.`, handler);
    return this.attach(sub);
  }

  private async attach(sub: RabbitSubscription): Promise<Subscription> {
    if (this.closed) throw new TransportUnavailableError('the transport is closed');
    this.subscriptions.add(sub);
    // Attached now when connected; otherwise on the next 'connect'.
    if (this.current) await sub.attach(this.current);
    return sub;
  }

  async deadLetterCount(): Promise<number> {
    const model = this.current;
    if (!model) throw new TransportUnavailableError('RabbitMQ is not connected');
    const channel = await model.createChannel();
    try {
      return (await channel.checkQueue(this.dlq)).messageCount;
    } finally {
      await channel.close().catch(() => {});
    }
  }

  async close(options: CloseOptions = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close(options)));
    const publish = this.publishChannel;
    this.publishChannel = undefined;
    if (publish) await publish.then((s) => s.channel.close()).catch(() => {});
    await this.model?.close().catch(() => {});
  }
}
