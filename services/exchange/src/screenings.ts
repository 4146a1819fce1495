import type { Sql, TransactionSql } from '@craig/db';
import { notAtFixpoint } from '@craig/retention';
import { RUNS_SPEC, SCREENING_FRESHNESS_MONTHS } from './archive-specs.ts';
import { ScreeningNotFoundError, ScreeningPastFreshnessError } from './errors.ts';

export type RunStatus = 'running' | 'completed' | 'failed';
export type MemberStatus = 'pending' | 'matched' | 'cleared' | 'error';
/** Member statuses no designed write path leaves (the members' archive fixpoint). */
export const TERMINAL_MEMBER_STATUSES: readonly MemberStatus[] = Object.freeze(['matched', 'cleared', 'error']);

export interface ScreeningMember {
  readonly id: string;
  readonly personRef: string;
  readonly status: MemberStatus;
  readonly createdAt: string;
  readonly completedAt: string | null;
  /** The member was handed to the SSA transport (matched members only). */
  readonly handedOff: boolean;
}

export interface Screening {
  readonly id: string;
  readonly caseId: string;
  readonly status: RunStatus;
  /** The date the screening's data is as of (`YYYY-MM-DD`). */
  readonly asOf: string;
  readonly createdAt: string;
  readonly completedAt: string | null;
  readonly invalidatedAt: string | null;
  readonly members: readonly ScreeningMember[];
}

/**
 * Start a screening run of `personRefs` for a case, in the caller's transaction (the inbox's,
 * for `case.opened`): the run `running`, every member `pending`. Returns the run id.
 */
export async function startScreening(tx: TransactionSql, run: { readonly caseId: string; readonly personRefs: readonly string[] }): Promise<string> {
  if (run.personRefs.length === 0) throw new RangeError('a screening run needs at least one person');
  const [row] = await tx<{ id: string }[]>`insert into ssa_screening_runs (case_id) values (${run.caseId}) returning id::text`;
  await tx`
    insert into ssa_screening_members (run_id, person_ref)
    select ${row!.id}::bigint, p from unnest(${run.personRefs as string[]}::text[]) with ordinality as u(p, n) order by n`;
  return row!.id;
}

/** A hot screening run with its members, or undefined (never existed, or archived away). */
export async function getScreening(sql: Sql, id: string): Promise<Screening | undefined> {
  const [run] = await sql<{ id: string; case_id: string; status: RunStatus; as_of: string; created_at: string; completed_at: string | null; invalidated_at: string | null }[]>`
    select id::text, case_id, status, as_of::text,
           to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at,
           to_char(completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as completed_at,
           to_char(invalidated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as invalidated_at
    from ssa_screening_runs where id = ${id}`;
  if (!run) return undefined;
  const members = await sql<{ id: string; person_ref: string; status: MemberStatus; created_at: string; completed_at: string | null; handed_off: boolean }[]>`
    select m.id::text, m.person_ref, m.status,
           to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at,
           to_char(m.completed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as completed_at,
           exists (select 1 from ssa_transport_handoffs h where h.member_id = m.id) as handed_off
    from ssa_screening_members m where m.run_id = ${id} order by m.id`;
  return {
    id: run.id,
    caseId: run.case_id,
    status: run.status,
    asOf: run.as_of,
    createdAt: run.created_at,
    completedAt: run.completed_at,
    invalidatedAt: run.invalidated_at,
    members: members.map((m) => ({ id: m.id, personRef: m.person_ref, status: m.status, createdAt: m.created_at, completedAt: m.completed_at, handedOff: m.handed_off })),
  };
}

/**
 * Invalidate a screening run: stamp `invalidated_at` (kept when already stamped).
 *
 * The writer-side in-WHERE refusal (seed 003, precondition 4) named by RUNS_SPEC's
 * `mutableColumns`: ONE UPDATE whose WHERE carries `notAtFixpoint(sql, RUNS_SPEC)`, so the
 * database itself refuses to touch a completed run past the SCREENING_FRESHNESS_MONTHS horizon
 * (never an app-side check-then-write, which the archive could race). When the UPDATE matched
 * nothing, a second, read-only statement decides which answer to give: no such run
 * (`ScreeningNotFoundError`), or a run at its fixpoint (`ScreeningPastFreshnessError`). The
 * fixpoint is monotone, so a row the UPDATE refused is still at it when the read runs.
 */
export async function invalidateScreening(sql: Sql, id: string): Promise<Screening> {
  const [updated] = await sql<{ id: string }[]>`
    update ssa_screening_runs set invalidated_at = coalesce(invalidated_at, now())
    where id = ${id} and ${notAtFixpoint(sql, RUNS_SPEC)}
    returning id::text`;
  if (updated) {
    const screening = await getScreening(sql, id);
    if (!screening) throw new ScreeningNotFoundError(id);
    return screening;
  }
  const [current] = await sql<{ as_of: string }[]>`select as_of::text from ssa_screening_runs where id = ${id}`;
  if (!current) throw new ScreeningNotFoundError(id);
  throw new ScreeningPastFreshnessError(id, current.as_of, SCREENING_FRESHNESS_MONTHS);
}
