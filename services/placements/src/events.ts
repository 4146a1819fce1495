// What placements publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';
import { CASE_EVENT_PATTERNS } from '@craig/service';

/** placements publishes `placement.started`, `placement.ended`; its `placements.cases` consumer keeps `case_refs` from `case.*`. */
export const PLACEMENTS_EVENTS = defineEventCatalog({
  service: 'placements',
  publishes: ['placement.started', 'placement.ended'],
  consumes: [{ consumer: 'placements.cases', patterns: CASE_EVENT_PATTERNS }],
});
