// What exchange publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** exchange publishes nothing (its archive is ledger-only); it starts a send job and a screening per `case.opened`. */
export const EXCHANGE_EVENTS = defineEventCatalog({
  service: 'exchange',
  publishes: [],
  consumes: [{ consumer: 'exchange.cases', patterns: ['case.opened'] }],
});
