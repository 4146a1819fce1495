// Safety report reads and writes. Filing takes the caller's transaction and stages
// `safety.reported` there: the event is published if and only if the report commits.
import type { Sql, TransactionSql } from '@craig/db';
import { stageEvent } from '@craig/mq';
import { SAFETY_EVENTS } from './events.ts';
import { caseRefStatus, CaseUnknownError } from '@craig/service';
import { SafetyReportNotFoundError } from './errors.ts';

export const SEVERITIES = ['low', 'medium', 'high'] as const;
export type Severity = (typeof SEVERITIES)[number];
export const MAX_SUMMARY_LENGTH = 2000;
export const MAX_REPORTS_PER_PAGE = 100;

export interface SafetyReportRow {
  readonly id: string;
  readonly caseId: string;
  readonly severity: Severity;
  readonly summary: string;
  readonly reportedAt: string;
}

interface DbReport {
  id: string;
  case_id: string;
  severity: Severity;
  summary: string;
  reported_at: Date;
}

const toReport = (r: DbReport): SafetyReportRow => ({ id: r.id, caseId: r.case_id, severity: r.severity, summary: r.summary, reportedAt: r.reported_at.toISOString() });

/**
 * File a report for a case known here (open or closed: a concern about a closed case is still
 * reported) and stage `safety.reported`. An unknown case is refused with `case_unknown`.
 */
export async function fileReport(tx: TransactionSql, report: { readonly caseId: string; readonly severity: Severity; readonly summary: string }): Promise<SafetyReportRow> {
  if ((await caseRefStatus(tx, report.caseId)) === undefined) throw new CaseUnknownError(report.caseId);
  const [row] = await tx<DbReport[]>`
    insert into safety_reports (case_id, severity, summary) values (${report.caseId}, ${report.severity}, ${report.summary}) returning *`;
  const filed = toReport(row!);
  // The summary stays here: consumers get the case, the severity and the time.
  await stageEvent(tx, {
    aggregateType: 'safety_report',
    aggregateId: filed.id,
    eventType: SAFETY_EVENTS.type('safety.reported'),
    payload: { reportId: filed.id, caseId: filed.caseId, severity: filed.severity, reportedAt: filed.reportedAt },
  });
  return filed;
}

export async function getReport(sql: Sql, reportId: string): Promise<SafetyReportRow> {
  const [row] = await sql<DbReport[]>`select * from safety_reports where id = ${reportId}`;
  if (!row) throw new SafetyReportNotFoundError(reportId);
  return toReport(row);
}

/** Reports oldest first, optionally of one case. */
export async function listReports(sql: Sql, options: { readonly caseId?: string; readonly limit: number }): Promise<SafetyReportRow[]> {
  const rows = await sql<DbReport[]>`
    select * from safety_reports
    where ${options.caseId === undefined ? sql`true` : sql`case_id = ${options.caseId}`}
    order by reported_at, id
    limit ${options.limit}`;
  return rows.map(toReport);
}
