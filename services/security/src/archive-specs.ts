import { announceArchivedBatches, defineArchiveSpec, fixpoints, type ArchiveSpec } from '@craig/retention';
import { SECURITY_EVENTS } from './events.ts';

/**
 * `audit_log`: insert-only (at its fixpoint from birth), hot for ARCHIVE_HOT_WINDOW_DAYS after
 * `received_at` (when security saw the event, never a producer's clock).
 */
export const AUDIT_LOG_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'audit_log',
  keyColumn: 'id',
  timestampColumn: 'received_at',
  fixpoint: fixpoints.insertOnly(),
});

/** `dead_letter_audit`: insert-only, hot for ARCHIVE_HOT_WINDOW_DAYS after `received_at`. */
export const DEAD_LETTER_AUDIT_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'dead_letter_audit',
  keyColumn: 'id',
  timestampColumn: 'received_at',
  fixpoint: fixpoints.insertOnly(),
});

/** The specs in FK deletion order (the two tables are independent: no foreign keys). */
export const SECURITY_ARCHIVE_SPECS: readonly ArchiveSpec[] = Object.freeze([AUDIT_LOG_SPEC, DEAD_LETTER_AUDIT_SPEC]);

/** The event type announcing one archived batch. */
export const ARCHIVE_BATCH_EVENT = SECURITY_EVENTS.type('security.archive.batch');

/**
 * The engine's `onBatchArchived` hook: stage `security.archive.batch` in the batch's ledger + delete
 * transaction, so the announcement exists exactly when the batch's delete committed
 * (the event id is the archive id: one announcement per archive object, ever).
 */
export const announceArchivedBatch = announceArchivedBatches(ARCHIVE_BATCH_EVENT);
