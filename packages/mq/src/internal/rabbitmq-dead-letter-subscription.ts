import type { ChannelModel, ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import type { DeadLetter } from '../transport.ts';
import { H, headerText, RabbitSubscription, userHeaders, type QueueSpec } from './rabbitmq-subscription.ts';

/** The dead-letter queue's subscription: a failed handler sees the message again later, forever. */
export class DeadLetterSubscription extends RabbitSubscription {
  constructor(
    spec: QueueSpec,
    logger: Logger,
    onClosed: (sub: RabbitSubscription) => void,
    currentModel: () => ChannelModel | undefined,
    private readonly queuePrefix: string,
    private readonly handler: (deadLetter: DeadLetter) => Promise<void>,
  ) {
    super(spec, logger, onClosed, currentModel);
  }

  protected run(msg: ConsumeMessage): Promise<void> {
    const headers = msg.properties.headers;
    // Dead-lettered by the broker itself (a queue's x-dead-letter-exchange): read x-death.
    const death = headers?.['x-death']?.[0];
    const deadLetter: DeadLetter = {
      consumer: headerText(headers, H.consumer) ?? (death ? death.queue.replace(this.queuePrefix, '') : 'unknown'),
      eventId: String(msg.properties.messageId ?? ''),
      routingKey: headerText(headers, H.routingKey) ?? death?.['routing-keys'][0] ?? msg.fields.routingKey,
      body: msg.content.toString(),
      headers: userHeaders(headers),
      error: headerText(headers, H.error) ?? (death ? `dead-lettered by the broker: ${death.reason}` : 'unknown'),
      attempts: Number(headerText(headers, H.attempts) ?? death?.count ?? 1),
      // Dead-lettered by craig: every hand-out. By the broker: those recorded on the copy it had.
      deliveries: Number(headerText(headers, H.deliveries) ?? 0),
      deadLetteredAt: headerText(headers, H.deadLetteredAt) ?? new Date(death ? death.time.value * 1000 : Date.now()).toISOString(),
    };
    return this.handler(deadLetter);
  }

  protected async onFailure(): Promise<boolean> {
    return false;
  }
}
