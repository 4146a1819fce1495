import type { ConsumerOptions } from '@craig/service';
import { perRegistry, startConsumer, type Subscription } from '@craig/mq';
import pino from 'pino';
import { Counter } from 'prom-client';
import { recordDeadLetter, recordEvent } from './audit-store.ts';
import { SECURITY_EVENTS } from './events.ts';

/** The inbox consumer that audits every event (`#`). */
export const AUDIT_CONSUMER = SECURITY_EVENTS.consumer('security.audit').consumer;
/** Every routing key: security sees every event of the fleet. */
export const AUDIT_PATTERNS: readonly string[] = SECURITY_EVENTS.consumer('security.audit').patterns;

/** The transport, pool, retry and delivery bounds, registry, logger and dedup-horizon check (`consumerOptions(service, deps, logger)` from @craig/service). */
export type AuditConsumerOptions = ConsumerOptions;

export interface AuditConsumers {
  readonly events: Subscription;
  readonly deadLetters: Subscription;
  /** Stop both (handlers in flight finish or are released for redelivery). */
  close(options?: { readonly graceMs?: number }): Promise<void>;
}

const deadLetterCounter = perRegistry((registry): Counter<'outcome' | 'consumer'> => new Counter({ name: 'security_dead_letters_total', help: 'Dead letters of the fleet consumed from the dead-letter queue, by outcome (recorded, duplicate) and the consumer that gave up on them.', labelNames: ['outcome', 'consumer'], registers: [registry] }));

/**
 * Subscribe the audit consumer to `#` (one `audit_log` row per event, in the inbox transaction)
 * and the fleet's dead-letter queue (one `dead_letter_audit` row per dead letter, with its
 * attempts and delivery count). A dead letter whose write fails is never dropped: the
 * transport shows it again later.
 */
export async function startAuditConsumers(options: AuditConsumerOptions): Promise<AuditConsumers> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const counter = deadLetterCounter(options.registry);
  const events = await startConsumer({
    transport: options.transport,
    sql: options.sql,
    consumer: AUDIT_CONSUMER,
    patterns: AUDIT_PATTERNS,
    maxRetries: options.maxRetries,
    maxDeliveries: options.maxDeliveries,
    registry: options.registry,
    horizon: options.horizon,
    logger,
    handler: (event, tx, delivery) => recordEvent(tx, event, delivery.body),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
  });
  let deadLetters: Subscription;
  try {
    deadLetters = await options.transport.subscribeDeadLetters(
      {
        ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
        ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
      },
      async (letter) => {
        const recorded = await recordDeadLetter(options.sql, letter);
        counter.inc({ outcome: recorded ? 'recorded' : 'duplicate', consumer: letter.consumer });
        logger.warn({ consumer: letter.consumer, eventId: letter.eventId, routingKey: letter.routingKey, attempts: letter.attempts, deliveries: letter.deliveries, error: letter.error, recorded }, 'dead letter audited');
      },
    );
  } catch (error) {
    await events.close({ graceMs: 0 });
    throw error;
  }
  return {
    events,
    deadLetters,
    async close(close = {}) {
      await Promise.all([events.close(close), deadLetters.close(close)]);
    },
  };
}
