import { applyCaseEvent, type ConsumerSpec } from '@craig/service';
import { PLACEMENTS_EVENTS } from './events.ts';
import { endPlacementsOfCase } from './placement-store.ts';

/** The durable consumer name of the `case.*` subscription. */
export const CASES_CONSUMER = PLACEMENTS_EVENTS.consumer('placements.cases').consumer;

/**
 * The `case.*` consumer: keeps `case_refs` and, when a case closes, ends its active placements.
 * Runs in the inbox transaction, so the dedup record, the case ref, the ended placements and
 * their `placement.ended` events commit together or not at all (a redelivery does it once).
 */
export function casesConsumer(consumer: string = CASES_CONSUMER): ConsumerSpec {
  return {
    consumer,
    patterns: PLACEMENTS_EVENTS.consumer('placements.cases').patterns,
    handler: async (event, tx) => {
      const change = await applyCaseEvent(tx, event);
      if (change?.status === 'closed') await endPlacementsOfCase(tx, change.caseId);
    },
  };
}
