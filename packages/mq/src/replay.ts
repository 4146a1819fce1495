import { LOCK_KEYS, type Sql, type TransactionSql } from '@craig/db';
import { InvalidReplayRangeError, ReplayOutOfWindowError } from './errors.ts';
import { horizonSql, type RetentionWindows } from './internal/horizon.ts';

export interface ReplayRange {
  /** Inclusive lower bound on `created_at`; must not be older than the replay horizon. */
  readonly from: Date | string;
  /** Exclusive upper bound on `created_at`. */
  readonly to: Date | string;
}

export interface ReplayResult {
  /** Published rows put back in the pending queue. */
  readonly replayed: number;
  /** The horizon the range was checked against (ISO), or null when both sweeps are disabled. */
  readonly horizon: string | null;
}

/**
 * Publish again the published outbox rows created in [from, to): puts their ids back in the
 * pending queue and marks them replayed (the drain sends them on its next tick). Pending and
 * parked rows are left as they are. It first takes the transport sweep's lock for its
 * transaction (waiting for a sweep cycle in progress, which is bounded by its cap), so the sweep
 * never deletes a row this replay is queuing (ADR-078). A `from` older than the replay
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
    // A sweep's DELETE that had already found a row not queued could still remove it after this
    // commit; holding the sweep's lock, no sweep statement runs until this transaction ends.
    await tx`select pg_advisory_xact_lock(${LOCK_KEYS.transportPrune.toString()}::bigint)`;
    // The horizon is re-checked in the statement itself (same transaction, same now()).
    const [row] = await tx<{ replayed: number }[]>`
      with replayed as (
        update event_outbox o
        set replayed_at = now(), replay_count = o.replay_count + 1, attempts = 0
        where o.parked_at is null
          and not exists (select 1 from event_outbox_queue q where q.id = o.id)
          and o.created_at >= ${from} and o.created_at < ${to}
          and o.created_at >= coalesce(${horizonSql(tx, windows)}, '-infinity'::timestamptz)
        returning o.id
      ), queued as (
        insert into event_outbox_queue (id) select id from replayed returning 1
      )
      select count(*)::int as replayed from queued`;
    return { replayed: row!.replayed, horizon };
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
