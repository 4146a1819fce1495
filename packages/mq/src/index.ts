/**
 * @craig/mq: transactional outbox and inbox, transports, the transport retention sweep, replay
 * and retention invariants.
 */
export { pruneTable, definePruneTarget, PRUNE_BATCH, PRUNE_CYCLE_CAP, type PruneTarget, type PruneTableOptions, type PruneTableResult } from './prune-table.ts';
