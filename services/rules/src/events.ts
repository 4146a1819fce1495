// What rules publishes and consumes, declared once: its code stages and subscribes through this
// declaration, and `pnpm xtask fleet check` reads the fleet's subscription graph from it.
import { defineEventCatalog } from '@craig/mq';

/** rules publishes an evaluation per event and an announcement per archived batch; it evaluates case, placement and safety events. */
export const RULES_EVENTS = defineEventCatalog({
  service: 'rules',
  publishes: ['rule.evaluated', 'rules.archive.batch'],
  consumes: [{ consumer: 'rules.evaluate', patterns: ['case.*', 'placement.*', 'safety.*'] }],
});
