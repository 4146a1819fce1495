import type { PendingQuery, Row, Sql } from 'postgres';
import type { RetentionWindows } from './internal/horizon.ts';

/** Grace past the window before rows count as overdue: two missed days of hourly cycles. */
export const OVERRUN_GRACE_HOURS = 48;

/** A retention invariant: rows of `table` past `windowDays` + grace should have been swept. */
export interface RetentionSpec {
  /** Invariant name, e.g. `event_outbox_retention_overrun`. */
  readonly name: string;
  readonly table: string;
  /** The timestamp the window is measured on. */
  readonly column: string;
  /** 0: the sweep is disabled and the invariant holds trivially. */
  readonly windowDays: number;
  readonly graceHours?: number;
  /**
   * The sweep's eligibility beyond age (e.g. published only); rows it never deletes are never
   * overdue. The table is aliased `t` in the query, so a fragment may qualify its columns with it.
   */
  readonly eligible?: (sql: Sql) => PendingQuery<Row[]>;
}

export interface RetentionOverrun {
  readonly name: string;
  readonly ok: boolean;
  readonly overdueRows: number;
  /** The oldest overdue timestamp, or null. */
  readonly oldest: Date | null;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validate a spec's identifiers once, at definition (they become SQL identifiers). */
export function defineRetentionSpec(spec: RetentionSpec): RetentionSpec {
  for (const [what, name] of [['table', spec.table], ['column', spec.column]] as const) {
    if (!IDENTIFIER.test(name)) throw new TypeError(`retention spec ${what} must be a plain lower-case identifier: ${JSON.stringify(name)}`);
  }
  if (!Number.isInteger(spec.windowDays) || spec.windowDays < 0) throw new RangeError(`windowDays must be a non-negative integer: ${spec.windowDays}`);
  return Object.freeze({ ...spec });
}

/**
 * Report-only: how many eligible rows are older than the window + grace (on the database's
 * clock). Red means a sweep is not running, is latched, or cannot keep up.
 */
export async function retentionOverrun(sql: Sql, spec: RetentionSpec): Promise<RetentionOverrun> {
  if (spec.windowDays === 0) return { name: spec.name, ok: true, overdueRows: 0, oldest: null };
  const grace = spec.graceHours ?? OVERRUN_GRACE_HOURS;
  const [row] = await sql<{ n: string; oldest: Date | null }[]>`
    select count(*)::text as n, min(${sql(`t.${spec.column}`)}) as oldest
    from ${sql(spec.table)} as t
    where ${spec.eligible ? sql`(${spec.eligible(sql)}) and` : sql``}
      ${sql(`t.${spec.column}`)} < now() - make_interval(days => ${spec.windowDays}, hours => ${grace})`;
  const overdueRows = Number(row!.n);
  return { name: spec.name, ok: overdueRows === 0, overdueRows, oldest: row!.oldest };
}

/** `event_outbox_retention_overrun` and `event_inbox_retention_overrun` for the service's windows. */
export function transportRetentionSpecs(windows: RetentionWindows): readonly [RetentionSpec, RetentionSpec] {
  return [
    defineRetentionSpec({ name: 'event_outbox_retention_overrun', table: 'event_outbox', column: 'created_at', windowDays: windows.outboxDays, eligible: (sql) => sql`published_at is not null` }),
    defineRetentionSpec({ name: 'event_inbox_retention_overrun', table: 'event_inbox', column: 'received_at', windowDays: windows.inboxDays }),
  ];
}
