import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';

/** Retention windows in days (settings: EVENT_OUTBOX_RETENTION_DAYS / EVENT_INBOX_RETENTION_DAYS); 0 disables that sweep. */
export interface RetentionWindows {
  readonly outboxDays: number;
  readonly inboxDays: number;
}

export function assertWindows(windows: RetentionWindows): void {
  for (const [name, days] of [['outboxDays', windows.outboxDays], ['inboxDays', windows.inboxDays]] as const) {
    if (!Number.isInteger(days) || days < 0 || days > 3650) throw new RangeError(`retention ${name} must be a whole number of days from 0 to 3650: ${days}`);
  }
}

/**
 * The replay horizon as a SQL expression on the database's own clock: `now() - outbox window`,
 * or `now() - (inbox window - 1 day)` when the outbox sweep is disabled, or NULL (no horizon:
 * nothing is ever pruned, every dedup record is kept) when both are.
 */
export function horizonSql(sql: Sql | TransactionSql, windows: RetentionWindows): PendingQuery<Row[]> {
  assertWindows(windows);
  // Both on: the outbox window (settings guarantee inbox >= outbox + 1; greatest() keeps a
  // window pair that breaks that rule on the safe side).
  if (windows.outboxDays > 0 && windows.inboxDays > 0) {
    return sql`greatest(now() - make_interval(days => ${windows.outboxDays}), now() - make_interval(days => ${windows.inboxDays - 1}))`;
  }
  if (windows.outboxDays > 0) return sql`(now() - make_interval(days => ${windows.outboxDays}))`;
  if (windows.inboxDays > 0) return sql`(now() - make_interval(days => ${windows.inboxDays - 1}))`;
  return sql`(null::timestamptz)`;
}

/**
 * How many days back a replay of this outbox may reach (what {@link horizonSql} allows): the
 * outbox window, or the inbox window - 1 when the outbox sweep is off, or `null` (no limit)
 * when both sweeps are. The smaller of the two when both are on, as `greatest()` above.
 */
export function replayWindowDays(windows: { readonly outboxDays: number; readonly inboxDays?: number | undefined }): number | null {
  const { outboxDays, inboxDays } = windows;
  if (outboxDays > 0 && inboxDays !== undefined && inboxDays > 0) return Math.min(outboxDays, inboxDays - 1);
  if (outboxDays > 0) return outboxDays;
  if (inboxDays !== undefined && inboxDays > 0) return inboxDays - 1;
  return null;
}
