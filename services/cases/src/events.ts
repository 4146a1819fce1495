// What cases publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** cases publishes `case.opened` / `case.closed` and consumes nothing. */
export const CASES_EVENTS = defineEventCatalog({ service: 'cases', publishes: ['case.opened', 'case.closed'] });
