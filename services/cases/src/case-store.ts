// Case reads and writes. Every write takes the caller's transaction and stages its event in
// it: the event is published if and only if the row change commits.
import type { Sql, TransactionSql } from '@craig/db';
import { stageEvent } from '@craig/mq';
import { CASES_EVENTS } from './events.ts';
import { CaseAlreadyClosedError, CaseNotFoundError } from './errors.ts';

/** Longest subject accepted (the table's check constraint says the same). */
export const MAX_SUBJECT_LENGTH = 200;
/** Largest page of `listCases`. */
export const MAX_CASES_PER_PAGE = 100;

export interface CaseRow {
  readonly id: string;
  readonly subject: string;
  readonly openedAt: string;
  readonly closedAt: string | null;
}

interface DbCase {
  id: string;
  subject: string;
  opened_at: Date;
  closed_at: Date | null;
}

const toCase = (r: DbCase): CaseRow => ({ id: r.id, subject: r.subject, openedAt: r.opened_at.toISOString(), closedAt: r.closed_at?.toISOString() ?? null });

/** Open a case and stage `case.opened`. */
export async function openCase(tx: TransactionSql, subject: string): Promise<CaseRow> {
  const [row] = await tx<DbCase[]>`insert into cases (subject) values (${subject}) returning id, subject, opened_at, closed_at`;
  const opened = toCase(row!);
  await stageEvent(tx, { aggregateType: 'case', aggregateId: opened.id, eventType: CASES_EVENTS.type('case.opened'), payload: { caseId: opened.id, openedAt: opened.openedAt } });
  return opened;
}

/**
 * Close an open case and stage `case.closed`. The update's row lock serializes two closes of
 * the same case: the second finds it closed and is refused, so `case.closed` is staged once.
 */
export async function closeCase(tx: TransactionSql, caseId: string): Promise<CaseRow> {
  const [row] = await tx<DbCase[]>`update cases set closed_at = now() where id = ${caseId} and closed_at is null returning id, subject, opened_at, closed_at`;
  if (!row) {
    const [existing] = await tx<DbCase[]>`select id, subject, opened_at, closed_at from cases where id = ${caseId}`;
    if (!existing) throw new CaseNotFoundError(caseId);
    throw new CaseAlreadyClosedError(caseId, existing.closed_at!.toISOString());
  }
  const closed = toCase(row);
  await stageEvent(tx, { aggregateType: 'case', aggregateId: closed.id, eventType: CASES_EVENTS.type('case.closed'), payload: { caseId: closed.id, closedAt: closed.closedAt } });
  return closed;
}

export async function getCase(sql: Sql, caseId: string): Promise<CaseRow> {
  const [row] = await sql<DbCase[]>`select id, subject, opened_at, closed_at from cases where id = ${caseId}`;
  if (!row) throw new CaseNotFoundError(caseId);
  return toCase(row);
}

/** Cases oldest first (or newest first), optionally only open or only closed. */
export async function listCases(sql: Sql, options: { readonly status?: 'open' | 'closed'; readonly order?: 'oldest' | 'newest'; readonly limit: number }): Promise<CaseRow[]> {
  const rows = await sql<DbCase[]>`
    select id, subject, opened_at, closed_at from cases
    where ${options.status === 'open' ? sql`closed_at is null` : options.status === 'closed' ? sql`closed_at is not null` : sql`true`}
    order by ${options.order === 'newest' ? sql`opened_at desc, id desc` : sql`opened_at, id`}
    limit ${options.limit}`;
  return rows.map(toCase);
}
