import { applyCaseEvent, CASE_EVENT_PATTERNS, type ConsumerSpec } from '@craig/service';

/** The durable consumer name of the `case.*` subscription. */
export const CASES_CONSUMER = 'safety.cases';

/** The `case.*` consumer: keeps `case_refs` (idempotent, any delivery order) in the inbox transaction. */
export function casesConsumer(consumer: string = CASES_CONSUMER): ConsumerSpec {
  return {
    consumer,
    patterns: CASE_EVENT_PATTERNS,
    handler: async (event, tx) => {
      await applyCaseEvent(tx, event);
    },
  };
}
