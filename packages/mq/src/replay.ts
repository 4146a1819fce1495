import type { Sql, TransactionSql } from '@craig/db';
import { InvalidReplayRangeError, ReplayOutOfWindowError } from './errors.ts';
import { horizonSql, type RetentionWindows } from './internal/horizon.ts';

export interface ReplayRange {
  /** Inclusive lower bound on `created_at`; must not be older than the replay horizon. */
  readonly from: Date | string;
  /** Exclusive upper bound on `created_at`. */
  readonly to: Date | string;
}

export interface ReplayResult {
  /** Published rows re-nulled for publishing again. */
  readonly replayed: number;
  /** The horizon the range was checked against (ISO), or null when both sweeps are disabled. */
  readonly horizon: string | null;
}

/**
 * Publish again the published outbox rows created in [from, to): re-nulls `published_at` and
 * marks them replayed (the drain sends them on its next tick). A `from` older than the replay
 * horizon (`now() - outbox window`, or `now() - (inbox window - 1 day)` when the outbox sweep
 * is off, on the database's clock) throws `ReplayOutOfWindowError` carrying the boundary:
 * consumers may already have pruned the dedup records that make a redelivery harmless.
 * Runs in the caller's transaction when given one, else in its own.
 */
export async function replayEvents(sql: Sql | TransactionSql, range: ReplayRange, windows: RetentionWindows): Promise<ReplayResult> {
  const from = toDate(range.from, range);
  const to = toDate(range.to, range);
  if (from.getTime() >= to.getTime()) throw new InvalidReplayRangeError(range.from, range.to, '`from` must be before `to`');
  const run = async (tx: TransactionSql): Promise<ReplayResult> => {
    const [check] = await tx<{ horizon: Date | null; outside: boolean }[]>`
      select ${horizonSql(tx, windows)} as horizon, coalesce(${from}::timestamptz < ${horizonSql(tx, windows)}, false) as outside`;
    const horizon = check!.horizon ? check!.horizon.toISOString() : null;
    if (check!.outside) throw new ReplayOutOfWindowError(from.toISOString(), horizon!, windows.outboxDays, windows.inboxDays);
    // The horizon is re-checked in the UPDATE itself (same transaction, same now()).
    const result = await tx`
      update event_outbox
      set published_at = null, replayed_at = now(), replay_count = replay_count + 1, attempts = 0, next_attempt_at = null
      where published_at is not null
        and created_at >= ${from} and created_at < ${to}
        and created_at >= coalesce(${horizonSql(tx, windows)}, '-infinity'::timestamptz)`;
    return { replayed: result.count, horizon };
  };
  return 'savepoint' in sql ? run(sql) : (sql).begin(run);
}

// JavaScript dates reach ±275,760 years; PostgreSQL's timestamptz input does not take the
// expanded ISO years (`-000001-…`, `+010000-…`) that `toISOString` writes outside 0000–9999.
// A bound past them is a malformed request (400), not a server error.
const MIN_TIME = Date.UTC(1, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function toDate(value: Date | string, range: ReplayRange): Date {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new InvalidReplayRangeError(range.from, range.to, `${JSON.stringify(value)} is not a timestamp`);
  if (date.getTime() < MIN_TIME || date.getTime() > MAX_TIME) throw new InvalidReplayRangeError(range.from, range.to, `${JSON.stringify(value)} is outside the years 0001 to 9999`);
  return date;
}
