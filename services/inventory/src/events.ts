// What inventory publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** inventory runs an outbox (replay, redrive, the transport sweep) but stages no event and consumes none. */
export const INVENTORY_EVENTS = defineEventCatalog({ service: 'inventory', publishes: [] });
