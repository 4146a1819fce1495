import type { Sql } from 'postgres';

/** What the devstack hands a service's demo traffic on every tick. */
export interface DemoContext {
  /** Base URL (`http://127.0.0.1:<port>`) of a running service of the stack, or `undefined` when it is not running. */
  urlOf(service: string): string | undefined;
  /** The admin token every service of the stack accepts. */
  readonly adminToken: string;
  /** Aborted when the devstack stops: pass it to `fetch`. */
  readonly signal: AbortSignal;
  /** A seeded random source, so a demo run can be repeated. */
  readonly random: () => number;
  /** The tick number, from 0. */
  readonly tick: number;
}

/**
 * What a service contributes to `pnpm xtask devstack`: aged history seeded straight into its
 * database, so its sweeps, archive and cleanup have real work the moment it starts, demo
 * traffic over its own HTTP API, and the tables the live view counts.
 */
export interface ServiceDemo {
  /**
   * Insert history aged past the service's retention windows (and some that is not), on an
   * owner connection to the service's freshly migrated database. Runs once per fresh devstack
   * database; must only insert rows the service's own writers could have produced (no row the
   * invariants forbid).
   */
  seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void>;
  /**
   * One round of demo traffic over the service's HTTP API (and only that), called about once a
   * second by the devstack. Should return within a few seconds; a thrown error is logged and
   * the next tick runs.
   */
  tick?(context: DemoContext): Promise<void>;
  /** Tables the live view shows a row count for (fixed names from code). */
  readonly tables: readonly string[];
}
