import type { TransactionSql } from '@craig/db';
import { stageEvent } from '@craig/mq';
import type { ArchivedBatch } from './engine.ts';

/** An `onBatchArchived` hook: stages the batch's announcement in the ledger + delete transaction. */
export type BatchArchivedHook = (tx: TransactionSql, batch: ArchivedBatch) => Promise<void>;

/** The payload of an archived-batch announcement: where the object is and what it holds. */
export interface ArchivedBatchPayload {
  readonly archiveId: string;
  readonly table: string;
  readonly key: string;
  readonly rows: number;
  readonly bytes: number;
  readonly sha256: string;
  readonly minKey: ArchivedBatch['minKey'];
  readonly maxKey: ArchivedBatch['maxKey'];
  readonly minTs: ArchivedBatch['minTs'];
  readonly maxTs: ArchivedBatch['maxTs'];
}

/**
 * The engine's `onBatchArchived` hook for a service that announces its archives: stage
 * `eventType` through the outbox (`stageEvent` from @craig/mq) in the batch's ledger + delete
 * transaction, so the announcement exists exactly when the batch's delete committed, and a
 * rolled-back batch announces nothing. The event id and aggregate id are the archive id: one
 * announcement per archive object, ever.
 */
export function announceArchivedBatches(eventType: string, aggregateType = 'archive'): BatchArchivedHook {
  return async (tx, batch) => {
    const payload: ArchivedBatchPayload = {
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
    };
    await stageEvent(tx, { eventId: batch.archiveId, aggregateType, aggregateId: batch.archiveId, eventType, payload });
  };
}
