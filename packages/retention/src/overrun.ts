import { defineRetentionSpec, type RetentionSpec } from '@craig/mq';
import { ALIAS, fixpointSql, guardsSql } from './internal/predicates.ts';
import type { ArchiveSpec } from './spec.ts';

/**
 * The archive invariants, `<table>_archive_overrun`, for `retentionOverrun` (@craig/mq): rows
 * the engine would archive (at their fixpoint, no dependents) that are older than the table's
 * hot window plus the grace. Red means the archive cycle is not running, keeps failing (a store
 * outage, a foreign occupant) or cannot keep up. The predicate is the engine's own, so the
 * invariant and the engine can never disagree on which rows are eligible.
 */
export function archiveRetentionSpecs(specs: readonly ArchiveSpec[], hotWindowDays: number): RetentionSpec[] {
  return specs.map((spec) =>
    defineRetentionSpec({
      name: `${spec.table}_archive_overrun`,
      table: spec.table,
      column: spec.timestampColumn,
      windowDays: Math.max(hotWindowDays, spec.hotWindowDays ?? 0),
      // retentionOverrun aliases the table `t`: ALIAS, which the engine's predicates qualify with.
      eligible: (sql) => sql`(${fixpointSql(sql, spec.fixpoint, ALIAS)}) and ${guardsSql(sql, spec)}`,
    }),
  );
}
