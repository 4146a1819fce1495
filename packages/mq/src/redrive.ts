import type { Sql } from '@craig/db';
import { InvalidRedriveIdError } from './errors.ts';
import type { ParkReason } from './internal/drain.ts';
import { horizonSql, type RetentionWindows } from './internal/horizon.ts';

export type { ParkReason } from './internal/drain.ts';

export interface RedriveOptions {
  /** Only these outbox row ids. */
  readonly ids?: ReadonlyArray<string | number | bigint>;
  /** Only rows parked for this reason. */
  readonly reason?: ParkReason;
  /** At most this many rows per call; default 10,000. */
  readonly limit?: number;
}

export interface RedriveResult {
  /** Unparked with a fresh attempt budget: the drain sends them on its next tick. */
  readonly redriven: number;
  /** Replayed rows still past the replay horizon: redelivering them could run side effects twice. */
  readonly refused: number;
}

/**
 * Send parked rows again. A row that was never delivered has no dedup record anywhere, so no
 * window limits it; a parked REPLAY (it was delivered once before) past the replay horizon is
 * refused and stays parked. Oldest first, at most `limit` rows.
 */
const MAX_BIGINT = 2n ** 63n - 1n;

// Checked here, not left to the `::bigint[]` cast: an id past int8 would fail the whole
// statement (22003) as a server error instead of naming the offending id.
function outboxId(id: string | number | bigint): string {
  const text = typeof id === 'bigint' ? id.toString() : typeof id === 'number' && Number.isSafeInteger(id) ? String(id) : typeof id === 'string' && /^[0-9]{1,19}$/.test(id) ? id : undefined;
  if (text === undefined || BigInt(text) < 1n || BigInt(text) > MAX_BIGINT) throw new InvalidRedriveIdError(id);
  return text;
}

export async function redriveParked(sql: Sql, windows: RetentionWindows, options: RedriveOptions = {}): Promise<RedriveResult> {
  const limit = options.limit ?? 10_000;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer: ${limit}`);
  const ids = options.ids?.map(outboxId);
  const [row] = await sql<{ redriven: number; refused: number }[]>`
    with candidates as (
      select id, coalesce(replayed_at is not null and created_at < ${horizonSql(sql, windows)}, false) as past
      from event_outbox
      where parked_at is not null
        ${ids ? sql`and id = any(${ids}::bigint[])` : sql``}
        ${options.reason ? sql`and parked_reason = ${options.reason}` : sql``}
      order by id
      limit ${limit}
      for update
    ), redriven as (
      update event_outbox o
      set parked_at = null, parked_reason = null, attempts = 0, next_attempt_at = null
      from candidates c
      where o.id = c.id and not c.past
      returning o.id
    )
    select (select count(*) from redriven)::int as redriven, (select count(*) from candidates where past)::int as refused`;
  return row!;
}
