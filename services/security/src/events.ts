// What security publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** security publishes an announcement per archived batch and audits every event of the fleet (`#`, itself included). */
export const SECURITY_EVENTS = defineEventCatalog({
  service: 'security',
  publishes: ['security.archive.batch'],
  consumes: [{ consumer: 'security.audit', patterns: ['#'] }],
});
