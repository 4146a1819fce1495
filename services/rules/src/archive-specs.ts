import type { TransactionSql } from '@craig/db';
import { stageEvent } from '@craig/mq';
import { defineArchiveSpec, fixpoints, type ArchivedBatch, type ArchiveSpec } from '@craig/retention';

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
export const ARCHIVE_BATCH_EVENT = 'rules.archive.batch';

/**
 * The engine's `onBatchArchived` hook: stage `rules.archive.batch` in the batch's ledger +
 * delete transaction, so the announcement exists exactly when the batch's delete committed
 * (the event id is the archive id: one announcement per archive object, ever).
 */
export async function announceArchivedBatch(tx: TransactionSql, batch: ArchivedBatch): Promise<void> {
  await stageEvent(tx, {
    eventId: batch.archiveId,
    aggregateType: 'archive',
    aggregateId: batch.archiveId,
    eventType: ARCHIVE_BATCH_EVENT,
    payload: {
      archiveId: batch.archiveId,
      table: batch.table,
      key: batch.key,
      rows: batch.rowCount,
      bytes: batch.bytes,
      sha256: batch.sha256,
      minKey: batch.minKey,
      maxKey: batch.maxKey,
      minTs: batch.minTs,
      maxTs: batch.maxTs,
    },
  });
}
