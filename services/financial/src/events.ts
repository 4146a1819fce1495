// What financial publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** financial publishes `subsidy.settled` per settled row; it queues a reconcile row per `placement.*`. */
export const FINANCIAL_EVENTS = defineEventCatalog({
  service: 'financial',
  publishes: ['subsidy.settled'],
  consumes: [{ consumer: 'financial.placements', patterns: ['placement.*'] }],
});
