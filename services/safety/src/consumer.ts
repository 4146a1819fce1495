import { applyCaseEvent, type ConsumerSpec } from '@craig/service';
import { SAFETY_EVENTS } from './events.ts';

/** The durable consumer name of the `case.*` subscription. */
export const CASES_CONSUMER = SAFETY_EVENTS.consumer('safety.cases').consumer;

/** The `case.*` consumer: keeps `case_refs` (idempotent, any delivery order) in the inbox transaction. */
export function casesConsumer(consumer: string = CASES_CONSUMER): ConsumerSpec {
  return {
    consumer,
    patterns: SAFETY_EVENTS.consumer('safety.cases').patterns,
    handler: async (event, tx) => {
      await applyCaseEvent(tx, event);
    },
  };
}
