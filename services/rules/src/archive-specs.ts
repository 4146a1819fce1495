import { announceArchivedBatches, defineArchiveSpec, fixpoints, type ArchiveSpec } from '@craig/retention';
import { RULES_EVENTS } from './events.ts';

/**
 * `rule_evaluations`: insert-only (at its fixpoint from birth; an UPDATE is refused by a
 * trigger), hot for ARCHIVE_HOT_WINDOW_DAYS after `evaluated_at` (the database's clock when the
 * consumer evaluated the event). No foreign key points into it, so no guard; its own reference
 * to `rule_set_snapshots` points at a table that is never archived.
 */
export const RULE_EVALUATIONS_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'rule_evaluations',
  keyColumn: 'id',
  timestampColumn: 'evaluated_at',
  fixpoint: fixpoints.insertOnly(),
});

/** The specs in FK deletion order: only `rule_evaluations` (snapshots and previews stay hot, seed 003). */
export const RULES_ARCHIVE_SPECS: readonly ArchiveSpec[] = Object.freeze([RULE_EVALUATIONS_SPEC]);

/** The event type announcing one archived batch. */
export const ARCHIVE_BATCH_EVENT = RULES_EVENTS.type('rules.archive.batch');

/**
 * The engine's `onBatchArchived` hook: stage `rules.archive.batch` in the batch's ledger + delete
 * transaction, so the announcement exists exactly when the batch's delete committed
 * (the event id is the archive id: one announcement per archive object, ever).
 */
export const announceArchivedBatch = announceArchivedBatches(ARCHIVE_BATCH_EVENT);
