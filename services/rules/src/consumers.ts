import type { ConsumerOptions } from '@craig/service';
import { perRegistry, startConsumer, type Subscription } from '@craig/mq';
import pino from 'pino';
import { Counter } from 'prom-client';
import { recordEvaluation } from './evaluation-store.ts';
import { RULES_EVENTS } from './events.ts';

/** The inbox consumer that evaluates events. */
export const EVALUATE_CONSUMER = RULES_EVENTS.consumer('rules.evaluate').consumer;
/** What rules evaluates: case, placement and safety events (never its own `rule.*` or `rules.*`). */
export const EVALUATE_PATTERNS: readonly string[] = RULES_EVENTS.consumer('rules.evaluate').patterns;

/** The transport, pool, retry and delivery bounds, registry, logger and dedup-horizon check (`consumerOptions(service, deps, logger)` from @craig/service). */
export type EvaluateConsumerOptions = ConsumerOptions;

const outcomeCounter = perRegistry((registry): Counter<'outcome'> => new Counter({ name: 'rules_evaluations_total', help: 'Events evaluated by rules.evaluate, by outcome (pass, flag, block).', labelNames: ['outcome'], registers: [registry] }));

/**
 * Subscribe `rules.evaluate` to case, placement and safety events: one `rule_evaluations` row
 * and one staged `rule.evaluated` per event, in the inbox transaction.
 */
export async function startEvaluateConsumer(options: EvaluateConsumerOptions): Promise<Subscription> {
  const logger = options.logger ?? pino({ level: 'silent' });
  const counter = outcomeCounter(options.registry);
  return startConsumer({
    transport: options.transport,
    sql: options.sql,
    consumer: EVALUATE_CONSUMER,
    patterns: EVALUATE_PATTERNS,
    maxRetries: options.maxRetries,
    maxDeliveries: options.maxDeliveries,
    registry: options.registry,
    horizon: options.horizon,
    logger,
    handler: async (event, tx, delivery) => {
      const result = await recordEvaluation(tx, event, delivery.body);
      if (result.outcome !== 'pass') logger.info({ eventId: event.eventId, eventType: event.eventType, outcome: result.outcome, matchedRules: result.matchedRules, snapshotVersion: result.snapshotVersion }, 'rule matched');
      // Counted before the inbox transaction commits: a commit that then fails is retried and
      // counted again, so the count may run ahead by such retries, never behind.
      counter.inc({ outcome: result.outcome });
    },
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
  });
}
