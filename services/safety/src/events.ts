// What safety publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';
import { CASE_EVENT_PATTERNS } from '@craig/service';

/** safety publishes `safety.reported`; its `safety.cases` consumer keeps `case_refs` from `case.*`. */
export const SAFETY_EVENTS = defineEventCatalog({
  service: 'safety',
  publishes: ['safety.reported'],
  consumes: [{ consumer: 'safety.cases', patterns: CASE_EVENT_PATTERNS }],
});
