import type { Sql, TransactionSql } from '@craig/db';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { decodeEnvelope, type EventEnvelope } from './envelope.ts';
import { dedupHorizonCheck, type DedupHorizonOptions } from './internal/horizon-check.ts';
import { perRegistry } from './metrics.ts';
import type { Delivery, Subscription, SubscribeOptions, Transport } from './transport.ts';

/** A consumer's handler: runs in the same transaction as the inbox dedup insert. */
export type EventHandler = (event: EventEnvelope, tx: TransactionSql, delivery: Delivery) => Promise<void>;

export interface InboxOptions {
  /** The consumer service's own database (it holds `event_inbox`). */
  readonly sql: Sql;
  readonly consumer: string;
  readonly handler: EventHandler;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /**
   * Check every delivery's producer windows against this service's inbox window (the fleet-wide
   * dedup horizon, ADR-058): counted, warned about and recorded, never refused. Services pass it
   * (`consumerOptions` in @craig/service); absent, nothing is checked.
   */
  readonly horizon?: DedupHorizonOptions;
}

const inboxCounter = perRegistry((registry): Counter<'consumer' | 'outcome'> => new Counter({ name: 'event_inbox_deliveries_total', help: 'Deliveries seen by inbox consumers, by outcome (handled, duplicate, failed).', labelNames: ['consumer', 'outcome'], registers: [registry] }));

/**
 * Wrap a handler with the inbox: in ONE transaction, insert the dedup record
 * `(consumer, event_id)` and run the handler. A duplicate (redelivery, replay, a second
 * instance racing on the same event) finds the record and is acknowledged without running the
 * handler; a concurrent first delivery makes the second wait on the record's key and then skip.
 * A failing handler rolls the record back, so the transport's retry runs it again. A body that
 * is not an envelope throws `InvalidEventError`, which the transports dead-letter at once.
 */
export function inboxHandler(options: InboxOptions): (delivery: Delivery) => Promise<void> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const counter = options.registry ? inboxCounter(options.registry) : undefined;
  const horizon = options.horizon ? dedupHorizonCheck({ ...options.horizon, consumer: options.consumer, sql: options.sql, registry: options.registry, logger }) : undefined;
  return async (delivery) => {
    const event = decodeEnvelope(delivery.body);
    // Before the dedup insert: a duplicate is a delivery too, and as likely to be a replay.
    await horizon?.(event, delivery);
    try {
      const outcome = await options.sql.begin(async (tx) => {
        const inserted = await tx`
          insert into event_inbox (consumer, event_id, event_type) values (${options.consumer}, ${event.eventId}, ${event.eventType})
          on conflict (consumer, event_id) do nothing
          returning 1`;
        if (inserted.length === 0) return 'duplicate' as const;
        await options.handler(event, tx, delivery);
        return 'handled' as const;
      });
      counter?.inc({ consumer: options.consumer, outcome });
      if (outcome === 'duplicate') logger.debug({ consumer: options.consumer, eventId: event.eventId }, 'duplicate delivery skipped');
    } catch (error) {
      counter?.inc({ consumer: options.consumer, outcome: 'failed' });
      logger.warn({ consumer: options.consumer, eventId: event.eventId, attempt: delivery.attempt, err: error }, 'event handler failed');
      throw error;
    }
  };
}

export interface ConsumerOptions extends Omit<SubscribeOptions, 'consumer'>, InboxOptions {
  readonly transport: Transport;
}

/** Subscribe `consumer` to its patterns with an inbox-wrapped handler: what a service composes. */
export function startConsumer(options: ConsumerOptions): Promise<Subscription> {
  const { transport, sql, handler, registry, logger, horizon, ...subscribe } = options;
  return transport.subscribe(subscribe, inboxHandler({ sql, consumer: options.consumer, handler, ...(registry ? { registry } : {}), ...(logger ? { logger } : {}), ...(horizon ? { horizon } : {}) }));
}
