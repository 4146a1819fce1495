import type { ConsumerOptions } from '@craig/service';
import { startConsumer, type Subscription } from '@craig/mq';
import { enqueueFromEvent } from './reconcile-store.ts';

/** The inbox consumer that feeds the reconcile queue. */
export const PLACEMENTS_CONSUMER = 'financial.placements';
export const PLACEMENT_PATTERNS: readonly string[] = Object.freeze(['placement.*']);

/** The transport, pool, retry and delivery bounds, registry and logger (`consumerOptions(deps, logger)` from @craig/service). */
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
    ...(options.logger ? { logger: options.logger } : {}),
    handler: async (event, tx) => {
      await enqueueFromEvent(tx, event);
    },
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
  });
}
