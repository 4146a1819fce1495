// The local view of cases that placements and safety keep from `case.*` events. Shared here so
// neither service depends on another service and the lines are not duplicated.
import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet, type Sql, type TransactionSql } from '@craig/db';
import { InvalidEventError, type EventEnvelope } from '@craig/mq';

/** The `case_refs` table (set `case_refs`): apply it after `mq`, before the service's own set. */
export const CASE_REFS_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'case_refs',
  directory: fileURLToPath(new URL('../sql/case-refs/', import.meta.url)),
  // Written by the case-event handler only: an insert, or a status move (never deleted).
  runtimeGrants: defineRuntimeGrants({ tables: { case_refs: ['select', 'insert'] }, updateColumns: { case_refs: ['status', 'updated_at'] } }),
});

/** The topic patterns a case-ref consumer subscribes to. */
export const CASE_EVENT_PATTERNS: readonly string[] = Object.freeze(['case.*']);

export type CaseRefStatus = 'open' | 'closed';

/** What one case event did to the local view. */
export interface CaseRefChange {
  readonly caseId: string;
  /** The status after the event. */
  readonly status: CaseRefStatus;
}

/** A write refused because this service never heard of the case (code `case_unknown`, HTTP 409). */
export class CaseUnknownError extends Error {
  readonly code = 'case_unknown';
  readonly retryable = false;
  constructor(readonly caseId: string) {
    super(`case ${caseId} is not known here (no case.opened seen yet)`);
  }
}

/** A write refused because the case is closed (code `case_closed`, HTTP 409). */
export class CaseClosedError extends Error {
  readonly code = 'case_closed';
  readonly retryable = false;
  constructor(readonly caseId: string) {
    super(`case ${caseId} is closed`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Apply a `case.opened` / `case.closed` event in the inbox handler's transaction; other `case.*`
 * types are ignored (`undefined`). Idempotent and order-free: opened inserts only when absent,
 * closed always wins, so any delivery order of the two ends closed.
 */
export async function applyCaseEvent(tx: TransactionSql, event: EventEnvelope): Promise<CaseRefChange | undefined> {
  if (event.eventType !== 'case.opened' && event.eventType !== 'case.closed') return undefined;
  const caseId = event.aggregateId;
  if (!UUID.test(caseId)) throw new InvalidEventError('aggregateId', caseId, 'must be a case id (a UUID)');
  if (event.eventType === 'case.opened') {
    await tx`insert into case_refs (case_id, status) values (${caseId}, 'open') on conflict (case_id) do nothing`;
    const [row] = await tx<{ status: CaseRefStatus }[]>`select status from case_refs where case_id = ${caseId}`;
    return { caseId, status: row!.status };
  }
  await tx`
    insert into case_refs (case_id, status) values (${caseId}, 'closed')
    on conflict (case_id) do update set status = 'closed', updated_at = now() where case_refs.status <> 'closed'`;
  return { caseId, status: 'closed' };
}

/**
 * Refuse a write for a case that is unknown here or closed. Takes a share lock on the case ref
 * for the rest of the caller's transaction, so a `case.closed` being applied concurrently either
 * waits for this write (and then sees it) or is seen by it.
 */
export async function requireOpenCase(tx: TransactionSql, caseId: string): Promise<void> {
  const [row] = await tx<{ status: CaseRefStatus }[]>`select status from case_refs where case_id = ${caseId} for share`;
  if (!row) throw new CaseUnknownError(caseId);
  if (row.status === 'closed') throw new CaseClosedError(caseId);
}

/** Whether the case is known here at all (without locking); for reads that only refuse unknown cases. */
export async function caseRefStatus(sql: Sql | TransactionSql, caseId: string): Promise<CaseRefStatus | undefined> {
  const [row] = await sql<{ status: CaseRefStatus }[]>`select status from case_refs where case_id = ${caseId}`;
  return row?.status;
}
