import type { ConsumerOptions } from '@craig/service';
import { startConsumer, type Subscription } from '@craig/mq';
import { FINANCIAL_EVENTS } from './events.ts';
import { enqueueFromEvent } from './reconcile-store.ts';

/** The inbox consumer that feeds the reconcile queue. */
export const PLACEMENTS_CONSUMER = FINANCIAL_EVENTS.consumer('financial.placements').consumer;
export const PLACEMENT_PATTERNS: readonly string[] = FINANCIAL_EVENTS.consumer('financial.placements').patterns;

/** The transport, pool, retry and delivery bounds, registry, logger and dedup-horizon check (`consumerOptions(service, deps, logger)` from @craig/service). */
export type PlacementConsumerOptions = ConsumerOptions;

/**
 * Subscribe `financial.placements` to `placement.*`: each `placement.started` /
 * `placement.ended` enqueues one pending reconcile row in the inbox transaction, so a
 * redelivery, a replay or a racing replica finds the inbox record and writes nothing.
 */
export function startPlacementConsumer(options: PlacementConsumerOptions): Promise<Subscription> {
  return startConsumer({
    transport: options.transport,
    sql: options.sql,
    consumer: PLACEMENTS_CONSUMER,
    patterns: PLACEMENT_PATTERNS,
    maxRetries: options.maxRetries,
    maxDeliveries: options.maxDeliveries,
    registry: options.registry,
    horizon: options.horizon,
    ...(options.logger ? { logger: options.logger } : {}),
    handler: async (event, tx) => {
      await enqueueFromEvent(tx, event);
    },
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
  });
}
