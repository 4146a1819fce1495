import type { Sql, TransactionSql } from '@craig/db';
import { stageEvent, type EventEnvelope } from '@craig/mq';
import { SubsidyImportExistsError } from './errors.ts';
import { FINANCIAL_EVENTS } from './events.ts';
import type { ImportRequest } from './import-request.ts';

export const QUEUE_STATUSES = ['pending', 'matched', 'settled', 'failed'] as const;
export type QueueStatus = (typeof QUEUE_STATUSES)[number];

/** The event each settled row announces. */
export const SUBSIDY_SETTLED_EVENT = FINANCIAL_EVENTS.type('subsidy.settled');
/** Most rows one settle call takes (each stages one event in the same transaction). */
export const MAX_SETTLE_BATCH = 1000;
export const DEFAULT_SETTLE_BATCH = 500;

export interface QueueRow {
  readonly id: string;
  readonly eventId: string;
  readonly placementId: string;
  readonly caseId: string | null;
  readonly kind: 'placement_started' | 'placement_ended';
  /** Decimal text (`"1250.00"`), null until matched. */
  readonly amount: string | null;
  readonly status: QueueStatus;
  readonly importId: string | null;
  readonly importLine: number | null;
  readonly enqueuedAt: Date;
  readonly matchedAt: Date | null;
  readonly settledAt: Date | null;
}

interface DbQueueRow {
  id: string;
  event_id: string;
  placement_id: string;
  case_id: string | null;
  kind: QueueRow['kind'];
  amount: string | null;
  status: QueueStatus;
  import_id: string | null;
  import_line: number | null;
  enqueued_at: Date;
  matched_at: Date | null;
  settled_at: Date | null;
}

const toRow = (r: DbQueueRow): QueueRow => ({
  id: r.id,
  eventId: r.event_id,
  placementId: r.placement_id,
  caseId: r.case_id,
  kind: r.kind,
  amount: r.amount,
  status: r.status,
  importId: r.import_id,
  importLine: r.import_line,
  enqueuedAt: r.enqueued_at,
  matchedAt: r.matched_at,
  settledAt: r.settled_at,
});

const KINDS: Readonly<Record<string, QueueRow['kind']>> = { 'placement.started': 'placement_started', 'placement.ended': 'placement_ended' };

/**
 * In the inbox transaction of a `placement.*` event: enqueue one pending row for a
 * `placement.started` or `placement.ended` (other placement events are not the queue's
 * business). The placement is the event's aggregate; the case comes from the payload when it
 * names one. `event_id` is unique, so the event enqueues once even past its inbox record.
 * Returns whether a row was written.
 */
export async function enqueueFromEvent(tx: TransactionSql, event: EventEnvelope): Promise<boolean> {
  const kind = KINDS[event.eventType];
  if (!kind) return false;
  const payload = event.payload as { caseId?: unknown } | null;
  const caseId = payload && typeof payload === 'object' && typeof payload.caseId === 'string' && payload.caseId.length <= 200 ? payload.caseId : null;
  const rows = await tx`
    insert into subsidy_reconcile_queue (event_id, placement_id, case_id, kind)
    values (${event.eventId}, ${event.aggregateId}, ${caseId}, ${kind})
    on conflict (event_id) do nothing
    returning 1`;
  return rows.length === 1;
}

export interface ImportResult {
  readonly id: string;
  readonly source: string;
  readonly period: string;
  readonly status: 'completed';
  readonly rowCount: number;
  readonly matched: number;
  /** 0-based indexes of the lines no pending row matched. */
  readonly unmatchedLines: number[];
  readonly importedAt: Date;
}

/**
 * Record an import and match it, in one transaction: each line takes the oldest pending row of
 * its placement (a second line for the same placement takes the next one), which becomes
 * `matched` with the line's amount. Lines that find nothing are kept, unmatched. A second
 * import of the same source and period is refused (`SubsidyImportExistsError`) with nothing written.
 */
export async function recordImport(sql: Sql, request: ImportRequest): Promise<ImportResult> {
  try {
    return await sql.begin(async (tx) => {
      const [existing] = await tx<{ id: string }[]>`select id::text from subsidy_imports where source = ${request.source} and period = ${request.period}::date`;
      if (existing) throw new SubsidyImportExistsError(request.source, request.period, existing.id);
      const [created] = await tx<{ id: string; imported_at: Date }[]>`
        insert into subsidy_imports (source, period, row_count) values (${request.source}, ${request.period}::date, ${request.lines.length})
        returning id::text, imported_at`;
      const importId = created!.id;
      const placements = request.lines.map((l) => l.placementId);
      await tx`
        insert into subsidy_import_lines (import_id, line_no, placement_id, amount)
        select ${importId}::bigint, l.line_no, l.placement_id, l.amount
        from unnest(${request.lines.map((_, i) => i + 1)}::int[], ${placements}::text[], ${request.lines.map((l) => l.amount)}::numeric[]) as l (line_no, placement_id, amount)`;
      // Lock the candidates first, so the match below (a fresh snapshot) sees any concurrent
      // import's matches as committed and never pairs a line with a row another import took.
      await tx`select id from subsidy_reconcile_queue where status = 'pending' and placement_id = any(${placements}::text[]) order by id for update`;
      const matched = await tx<{ line_no: number }[]>`
        with lines as (
          select line_no, placement_id, amount, row_number() over (partition by placement_id order by line_no) as rn
          from subsidy_import_lines where import_id = ${importId}
        ), candidates as (
          select id, placement_id, row_number() over (partition by placement_id order by enqueued_at, id) as rn
          from subsidy_reconcile_queue
          where status = 'pending' and placement_id in (select placement_id from lines)
        ), pairs as (
          select c.id, l.line_no, l.amount from lines l join candidates c using (placement_id, rn)
        ), taken as (
          update subsidy_reconcile_queue q
          set status = 'matched', amount = p.amount, import_id = ${importId}, import_line = p.line_no, matched_at = now()
          from pairs p
          where q.id = p.id and q.status = 'pending'
          returning q.import_line
        )
        update subsidy_import_lines set matched = true
        where import_id = ${importId} and line_no in (select import_line from taken)
        returning line_no`;
      const [done] = await tx<{ completed_at: Date }[]>`
        update subsidy_imports set status = 'completed', matched_count = ${matched.length}, completed_at = now()
        where id = ${importId} returning completed_at`;
      if (!done) throw new Error(`subsidy import ${importId} vanished inside its own transaction`);
      const hit = new Set(matched.map((m) => m.line_no));
      return {
        id: importId,
        source: request.source,
        period: request.period,
        status: 'completed' as const,
        rowCount: request.lines.length,
        matched: matched.length,
        unmatchedLines: request.lines.map((_, i) => i).filter((i) => !hit.has(i + 1)),
        importedAt: created!.imported_at,
      };
    });
  } catch (error) {
    // Two imports of one source and period racing: the loser hits the unique key.
    if ((error as { constraint_name?: string }).constraint_name === 'subsidy_imports_source_period_key') {
      const [winner] = await sql<{ id: string }[]>`select id::text from subsidy_imports where source = ${request.source} and period = ${request.period}::date`;
      throw new SubsidyImportExistsError(request.source, request.period, winner?.id ?? '?');
    }
    throw error;
  }
}

export interface SettleResult {
  readonly settled: number;
  readonly rows: QueueRow[];
}

/**
 * Settle up to `limit` matched rows, oldest first, and stage one `subsidy.settled` per row in
 * the same transaction: the rows are settled if and only if their events will be published.
 * Rows another settler holds are skipped, never waited on. The update re-checks `matched`, so a
 * settled row is never touched again.
 */
export async function settleMatched(sql: Sql, limit: number): Promise<SettleResult> {
  return sql.begin(async (tx) => {
    const rows = await tx<DbQueueRow[]>`
      update subsidy_reconcile_queue set status = 'settled', settled_at = now()
      where id in (select id from subsidy_reconcile_queue where status = 'matched' order by id limit ${limit} for update skip locked)
        and status = 'matched'
      returning id::text, event_id, placement_id, case_id, kind, amount::text, status, import_id::text, import_line, enqueued_at, matched_at, settled_at`;
    const settled = rows.map(toRow).sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
    for (const row of settled) {
      await stageEvent(tx, {
        aggregateType: 'placement',
        aggregateId: row.placementId,
        eventType: SUBSIDY_SETTLED_EVENT,
        payload: { queueId: row.id, placementId: row.placementId, caseId: row.caseId, kind: row.kind, amount: row.amount, importId: row.importId, settledAt: row.settledAt },
      });
    }
    return { settled: settled.length, rows: settled };
  });
}

export const MAX_QUEUE_PAGE = 500;
export const DEFAULT_QUEUE_PAGE = 100;

/** Queue rows oldest first, optionally of one status. */
export async function listQueue(sql: Sql, query: { readonly status?: QueueStatus; readonly limit: number }): Promise<QueueRow[]> {
  const rows = await sql<DbQueueRow[]>`
    select id::text, event_id, placement_id, case_id, kind, amount::text, status, import_id::text, import_line, enqueued_at, matched_at, settled_at
    from subsidy_reconcile_queue
    where ${query.status === undefined ? sql`true` : sql`status = ${query.status}`}
    order by id
    limit ${query.limit}`;
  return rows.map(toRow);
}
