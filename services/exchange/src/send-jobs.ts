import type { Sql, TransactionSql } from '@craig/db';
import { SendJobNotFoundError, SendJobTerminalError } from './errors.ts';

/** Every status of a send job; the last three are terminal (CHECK-paired with `finished_at`). */
export const SEND_JOB_STATUSES = ['queued', 'sending', 'sent', 'failed', 'cancelled'] as const;
export type SendJobStatus = (typeof SEND_JOB_STATUSES)[number];
/** Statuses no designed write path leaves; the sweep deletes only these. */
export const TERMINAL_SEND_JOB_STATUSES: readonly SendJobStatus[] = Object.freeze(['sent', 'failed', 'cancelled']);
/** Statuses the worker and a cancel may still move. */
export const LIVE_SEND_JOB_STATUSES: readonly SendJobStatus[] = Object.freeze(['queued', 'sending']);

export const MAX_SEND_JOB_PAGE = 500;
export const DEFAULT_SEND_JOB_PAGE = 100;

export interface SendJob {
  readonly id: string;
  readonly caseId: string;
  readonly destination: string;
  readonly status: SendJobStatus;
  readonly attempts: number;
  readonly createdAt: string;
  readonly finishedAt: string | null;
}

interface SendJobRow {
  id: string;
  case_id: string;
  destination: string;
  status: SendJobStatus;
  attempts: number;
  created_at: string;
  finished_at: string | null;
}

const toJob = (r: SendJobRow): SendJob => ({ id: r.id, caseId: r.case_id, destination: r.destination, status: r.status, attempts: r.attempts, createdAt: r.created_at, finishedAt: r.finished_at });

/** Queue a send job for a case, in the caller's transaction (the inbox's, for `case.opened`). */
export async function queueSendJob(tx: TransactionSql, job: { readonly caseId: string; readonly destination: string }): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into exchange_send_jobs (case_id, destination) values (${job.caseId}, ${job.destination}) returning id::text`;
  return row!.id;
}

/** Hot send jobs, newest first, optionally of one status. */
export async function listSendJobs(sql: Sql, query: { readonly status?: SendJobStatus; readonly limit: number }): Promise<SendJob[]> {
  const rows = await sql<SendJobRow[]>`
    select id::text, case_id, destination, status, attempts,
           to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at,
           to_char(finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as finished_at
    from exchange_send_jobs
    ${query.status === undefined ? sql`` : sql`where status = ${query.status}`}
    order by exchange_send_jobs.id desc
    limit ${query.limit}`;
  return rows.map(toJob);
}

/**
 * Cancel a live job: ONE guarded UPDATE (`status in ('queued', 'sending')` in its WHERE), so a
 * job the worker finished meanwhile is never moved out of its terminal state. When it matched
 * nothing, a second read tells which: no such job (`SendJobNotFoundError`), or a finished one
 * (`SendJobTerminalError`, naming its status).
 */
export async function cancelSendJob(sql: Sql, id: string): Promise<SendJob> {
  const [row] = await sql<SendJobRow[]>`
    update exchange_send_jobs set status = 'cancelled', finished_at = now()
    where id = ${id} and status = any(${LIVE_SEND_JOB_STATUSES as string[]})
    returning id::text, case_id, destination, status, attempts,
              to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at,
              to_char(finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as finished_at`;
  if (row) return toJob(row);
  const [current] = await sql<{ status: string }[]>`select status from exchange_send_jobs where id = ${id}`;
  if (!current) throw new SendJobNotFoundError(id);
  throw new SendJobTerminalError(id, current.status);
}
