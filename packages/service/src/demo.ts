import type { Sql } from 'postgres';

/**
 * What a service contributes to `pnpm xtask devstack`: aged history seeded straight into its
 * database, so its sweeps, archive and cleanup have real work the moment it starts, and the
 * tables the live view counts. Demo traffic itself is driven over the services' HTTP APIs.
 */
export interface ServiceDemo {
  /**
   * Insert history aged past the service's retention windows (and some that is not), on an
   * owner connection to the service's freshly migrated database. Must be idempotent enough to
   * run once per fresh devstack database; must only insert rows the service's own writers
   * could have produced (no row the invariants forbid).
   */
  seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void>;
  /** Tables the live view shows a row count for (fixed names from code). */
  readonly tables: readonly string[];
}
