import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { PendingQuery, Row, Sql } from 'postgres';

/** Rows per DELETE statement: bounds lock and WAL per statement and lets other work interleave. */
export const PRUNE_BATCH = 5_000;
/**
 * The transport sweep's latency target per batch (ADR-064, ADR-069): batches start at
 * {@link PRUNE_BATCH} rows and grow, up to {@link PRUNE_MAX_BATCH}, while they finish well
 * within it (and shrink back when one takes longer), so the per-statement overhead (round trip,
 * plan, commit) is amortized over as many rows as the target allows. 60 ms since the sweep
 * compresses its full-page images: that costs CPU per row, which larger batches win back.
 */
export const PRUNE_TARGET_BATCH_MS = 60;
/** Most rows an adaptive batch grows to. */
export const PRUNE_MAX_BATCH = 50_000;
/**
 * Most rows one table may lose in one cycle. A jumped clock (NTP glitch, VM migration) can make
 * `now() - window` match almost everything; past this the cycle stops and warns instead.
 */
export const PRUNE_CYCLE_CAP = 1_000_000;

/**
 * What a sweep deletes. Built once, in code, from fixed names: `table` and `orderBy` are SQL
 * identifiers and never come from input; `eligible` is the whole eligibility predicate, with
 * every value a bound parameter.
 */
export interface PruneTarget {
  readonly table: string;
  /**
   * Indexed column the batches walk in order, so no batch rescans the table. Batches continue
   * from the last value deleted (a keyset cursor), so it must be non-null on eligible rows and
   * have a text form that casts back to its type (timestamps, integers, text).
   */
  readonly orderBy: string;
  /** The eligibility predicate. Evaluated by the select AND re-checked by the delete. */
  readonly eligible: (sql: Sql) => PendingQuery<Row[]>;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Validate a target's identifiers once, at definition. */
export function definePruneTarget(target: PruneTarget): PruneTarget {
  for (const [what, name] of [['table', target.table], ['orderBy', target.orderBy]] as const) {
    if (!IDENTIFIER.test(name)) throw new TypeError(`prune target ${what} must be a plain lower-case identifier: ${JSON.stringify(name)}`);
  }
  return Object.freeze({ ...target });
}

/** One batch of a {@link pruneTable} run. */
export interface PruneBatch {
  readonly deleted: number;
  /** Rows this batch was allowed (its LIMIT): the adaptive size, or less at the cap. */
  readonly limit: number;
  readonly ms: number;
  /** Rows deleted so far by this call. */
  readonly total: number;
}

export interface PruneTableOptions {
  /** Rows per statement; default {@link PRUNE_BATCH}. With `targetBatchMs`, the first and smallest batch. */
  readonly batchSize?: number;
  /**
   * Adapt the batch size to this latency per batch (ms): after a full batch, the next one is
   * sized to take about this long (at most doubling, at most halving, between `batchSize` and
   * `maxBatchSize`). Without it every batch is `batchSize` rows.
   */
  readonly targetBatchMs?: number;
  /** Largest adaptive batch; default {@link PRUNE_MAX_BATCH}. */
  readonly maxBatchSize?: number;
  /** Most rows this call deletes; default {@link PRUNE_CYCLE_CAP}. */
  readonly cap?: number;
  /** Checked between batches: an abort stops the loop after the batch in flight. */
  readonly signal?: AbortSignal;
  /** Called after each batch (progress, metrics, per-batch timing); awaited before the next batch. */
  readonly onBatch?: (batch: PruneBatch) => unknown;
}

export interface PruneTableResult {
  readonly deleted: number;
  readonly batches: number;
  /** The cap was reached and eligible rows remain. */
  readonly capped: boolean;
  /** The signal aborted between batches. */
  readonly aborted: boolean;
}

/**
 * Delete a target's eligible rows in batches, oldest `orderBy` first, each batch's DELETE one
 * statement in autocommit, each starting where the previous one stopped (so per-batch cost does
 * not grow with the rows already deleted). A batch first reads its upper bound, the key `limit`
 * eligible rows on, then deletes the eligible rows in [cursor, bound) with one index range scan
 * (ADR-065). When fewer than `limit + 1` eligible rows are left, or more than `limit` share the
 * batch's first key, the batch instead selects exactly `limit` rows' ctids and deletes them in one
 * statement (a ctid is only stable within one statement). Either way every DELETE re-checks the
 * whole predicate on the rows it removes: a row changed by a concurrent writer while the delete
 * waited on its lock (a replay re-nulling `published_at`, say) is re-evaluated at its new
 * version and survives. A range batch removes at most `limit` rows plus any that became
 * eligible inside its range between its two statements (an aged pending row published in that
 * instant), never a row outside it.
 *
 * With `targetBatchMs`, each full batch sizes the next one to take about that long (between
 * `batchSize` and `maxBatchSize`): the keyset cursor makes every batch's cost proportional to
 * its rows, so a larger batch only amortizes the per-statement overhead (ADR-064).
 *
 * Stops on a short last batch, at the cap, or on abort; yields to the event loop between batches.
 * Run it on a dedicated session holding the sweep's advisory lock.
 */
export async function pruneTable(sql: Sql, target: PruneTarget, options: PruneTableOptions = {}): Promise<PruneTableResult> {
  const batchSize = options.batchSize ?? PRUNE_BATCH;
  const cap = options.cap ?? PRUNE_CYCLE_CAP;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer: ${batchSize}`);
  if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`cap must be a positive integer: ${cap}`);
  const targetMs = options.targetBatchMs;
  const maxBatch = options.maxBatchSize ?? Math.max(PRUNE_MAX_BATCH, batchSize);
  if (targetMs !== undefined && (!Number.isFinite(targetMs) || targetMs <= 0)) throw new RangeError(`targetBatchMs must be a positive number: ${targetMs}`);
  if (!Number.isInteger(maxBatch) || maxBatch < batchSize) throw new RangeError(`maxBatchSize must be an integer >= batchSize (${batchSize}): ${maxBatch}`);

  let deleted = 0;
  let batches = 0;
  // Keyset cursor: each batch starts at the last key the previous one deleted (inclusive, for
  // ties), so no batch walks the index entries of the rows already deleted in this call. A row
  // behind the cursor that became eligible meanwhile is left for the next cycle.
  let cursor: string | null = null;
  let size = batchSize;
  for (;;) {
    if (options.signal?.aborted) return { deleted, batches, capped: false, aborted: true };
    const limit = Math.min(size, cap - deleted);
    const started = performance.now();
    const after: PendingQuery<Row[]> = cursor === null ? sql`` : sql`and ${sql(target.orderBy)} >= ${cursor}`;
    // The batch's bounds, walking the index the batches follow: its first eligible key and the
    // key `limit` eligible rows on. Everything before the latter is this batch.
    // (Cast outside: a projection is computed for every row OFFSET skips.)
    const keyAt = (offset: number) => sql`
      select ${sql(target.orderBy)} from ${sql(target.table)}
      where ${target.eligible(sql)} ${after}
      order by ${sql(target.orderBy)}
      offset ${offset} limit 1`;
    const [bound] = await sql<{ lo: string | null; hi: string | null }[]>`select (${keyAt(0)})::text as lo, (${keyAt(limit)})::text as hi`;
    let count: number;
    let final = false;
    if (bound!.hi !== null && bound!.hi !== bound!.lo) {
      // A range batch: one index range scan that deletes as it goes, the whole predicate
      // re-checked on every row it removes (measured 25–30 % cheaper per row than selecting
      // ctids and deleting by them, which visits each row twice; ADR-065). Counted by its
      // command tag: a `RETURNING` counted in a CTE stores every deleted row's output in a
      // tuplestore first, 10–25 % of the batch's time (ADR-088).
      const r = await sql`
        delete from ${sql(target.table)}
        where ${target.eligible(sql)} ${after} and ${sql(target.orderBy)} < ${bound!.hi}`;
      count = r.count;
      cursor = bound!.hi;
    } else {
      // The last batch (at most `limit` eligible rows left), or more than `limit` rows tied on
      // its first key (an empty range): select exactly `limit` rows' ctids and delete them, in
      // one statement.
      const [r] = await sql<{ count: number; last: string | null }[]>`
        with batch as (
          delete from ${sql(target.table)}
          where ctid = any(array(
              select ctid from ${sql(target.table)}
              where ${target.eligible(sql)} ${after}
              order by ${sql(target.orderBy)}
              limit ${limit}
            ))
            and ${target.eligible(sql)}
          returning ${sql(target.orderBy)} as key
        )
        select count(*)::int as count, max(key)::text as last from batch`;
      count = r!.count;
      cursor = r!.last ?? cursor;
      final = count < limit;
    }
    deleted += count;
    batches++;
    const ms = performance.now() - started;
    await options.onBatch?.({ deleted: count, limit, ms, total: deleted });
    if (final) return { deleted, batches, capped: false, aborted: false };
    if (targetMs !== undefined && limit === size) size = nextBatchSize(size, ms, targetMs, batchSize, maxBatch);
    if (deleted >= cap) {
      // At the cap: capped only if something eligible is left (a cheap probe on the index).
      const [left] = await sql<{ more: boolean }[]>`select exists (select 1 from ${sql(target.table)} where ${target.eligible(sql)}) as more`;
      return { deleted, batches, capped: left!.more, aborted: false };
    }
    await yieldToEventLoop();
  }
}

/**
 * The next adaptive batch: sized so that it should take `targetMs` at the rate the last full
 * batch ran, changed by at most a factor of two per batch (one slow batch on a noisy machine
 * does not collapse the size, nor one fast one overshoot), within [min, max].
 */
export function nextBatchSize(size: number, ms: number, targetMs: number, min: number, max: number): number {
  const scaled = size * (targetMs / Math.max(ms, 0.1));
  return Math.max(min, Math.min(max, Math.round(Math.min(size * 2, Math.max(size / 2, scaled)))));
}
