import type { PendingQuery, Row, Sql } from 'postgres';
import { fixpointSql } from './internal/predicates.ts';
import type { ArchiveSpec } from './spec.ts';

/**
 * The writer-side in-WHERE refusal (precondition 4): `NOT (the spec's fixpoint)`, for the WHERE
 * of an UPDATE that may touch a column the fixpoint does not read. Evaluated by the database in
 * the writing statement itself, so it is monotone and race-free (never an app-side
 * check-then-write): once a row is at its fixpoint the update matches nothing, and the archive
 * can never miss the change.
 *
 * ```ts
 * await sql`update runs set invalidated_at = now()
 *           where id = ${id} and ${notAtFixpoint(sql, runsSpec)}`;
 * ```
 *
 * `qualifier` is the writer's alias for the table (columns are unqualified when absent). A row
 * whose fixpoint columns are NULL is not at its fixpoint, so the writer may still touch it.
 */
export function notAtFixpoint(sql: Sql, spec: ArchiveSpec, qualifier?: string): PendingQuery<Row[]> {
  return sql`not coalesce((${fixpointSql(sql, spec.fixpoint, qualifier ?? null)}), false)`;
}
