import type { Sql, TransactionSql, WalCompressionMethod } from '@craig/db';
import type { Logger } from 'pino';
import { retentionHeaders } from '../dedup-horizon.ts';
import { assertEventFields, encodeEnvelope } from '../envelope.ts';
import type { MqMetrics } from '../metrics.ts';
import type { OutgoingMessage, PublishOutcome, Transport } from '../transport.ts';
import type { Baton } from './baton.ts';
import { horizonSql, type RetentionWindows } from './horizon.ts';

export type ParkReason = 'malformed' | 'max_attempts' | 'oversize' | 'replay_past_horizon';

export interface DrainResult {
  /** Rows claimed by this batch. */
  readonly claimed: number;
  /** Stamped published after the transport confirmed them. */
  readonly published: number;
  /** Failed and counted an attempt (retried later with backoff). */
  readonly failed: number;
  /** Parked (malformed, oversize, past OUTBOX_MAX_ATTEMPTS, or a replay past the horizon). */
  readonly parked: number;
  /** Not sent because the transport was unreachable: left untouched, no attempt counted. */
  readonly unavailable: number;
}

export interface DrainContext {
  readonly sql: Sql;
  readonly transport: Transport;
  readonly service: string;
  readonly retention: RetentionWindows;
  readonly maxAttempts: number;
  readonly batchSize: number;
  /** A claim stops once its rows' payload and headers text reach this many bytes (plus that last row). */
  readonly batchBytes: number;
  readonly logger: Logger;
  readonly metrics: MqMetrics | undefined;
  /** Shared by concurrent lanes: claims, and publish calls, go in turn (see {@link DrainTurns}). */
  readonly turn?: DrainTurns;
  /** Set with `SET LOCAL` in every drain transaction: how its full-page images are compressed (ADR-086). */
  readonly walCompression?: WalCompressionMethod;
}

/**
 * The two turns concurrent drain lanes take. A lane takes `claim` to claim, and before passing
 * it on queues for `publish`, so publish calls go in claim order (that is, in id order). Between
 * the two it turns its rows into messages, while the next lane's claim runs on the server.
 */
export interface DrainTurns {
  readonly claim: Baton;
  readonly publish: Baton;
}

/** One batch's counts, and whether its claim was full (it hit its row or byte limit): more may be due. */
export interface BatchOutcome {
  readonly result: DrainResult;
  readonly full: boolean;
}

interface ClaimedRow {
  id: string;
  event_id: string;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  payload: string;
  headers: string;
  created_at: Date;
  attempts: number;
  past_horizon: boolean;
  /** The claim's payload and headers bytes up to this row (int8, as text). */
  claimed_bytes: string;
}

/**
 * Publish one batch of pending rows, oldest first. The claim (`FOR UPDATE SKIP LOCKED`, at most
 * `batchSize` rows and about `batchBytes` of payload) is held across the publish, so no two
 * replicas publish a row at once; `published_at` is stamped in the same transaction only after
 * the transport confirmed. A crash between the confirm and the commit leaves the row pending:
 * it is published again (at-least-once; inboxes dedupe).
 */
export async function drainBatch(ctx: DrainContext): Promise<BatchOutcome> {
  const release = ctx.turn ? await ctx.turn.claim.take() : () => {};
  try {
    return await claimAndPublish(ctx, release);
  } finally {
    release();
  }
}

interface PreparedBatch {
  /** Rows not to publish: parked with their reason. */
  readonly park: Array<{ id: string; reason: ParkReason; error: string }>;
  /** The rows to publish, in the order of `messages`. */
  readonly sending: ClaimedRow[];
  readonly messages: OutgoingMessage[];
}

/** Park what must not go out (past the horizon, out of attempts, malformed); encode the rest. */
function prepareBatch(rows: readonly ClaimedRow[], ctx: DrainContext): PreparedBatch {
  const park: PreparedBatch['park'] = [];
  const sending: ClaimedRow[] = [];
  // Every consumer checks its inbox window against these (the fleet-wide dedup horizon).
  const headers = retentionHeaders(ctx.retention);
  const messages: OutgoingMessage[] = [];
  for (const row of rows) {
    if (row.past_horizon) {
      // A replayed row whose consumers may have pruned their dedup records meanwhile (a long
      // outage since the replay): delivering it could run side effects twice.
      park.push({ id: row.id, reason: 'replay_past_horizon', error: 'replayed row is past the replay horizon at publish time; consumers may no longer deduplicate it' });
      continue;
    }
    if (row.attempts >= ctx.maxAttempts) {
      park.push({ id: row.id, reason: 'max_attempts', error: `${row.attempts} failed attempts (OUTBOX_MAX_ATTEMPTS=${ctx.maxAttempts})` });
      continue;
    }
    try {
      // Most events carry no headers of their own: no need to parse '{}' to check it.
      assertEventFields({ eventId: row.event_id, aggregateType: row.aggregate_type, aggregateId: row.aggregate_id, eventType: row.event_type, headers: row.headers === '{}' ? {} : JSON.parse(row.headers) });
    } catch (error) {
      park.push({ id: row.id, reason: 'malformed', error: (error as Error).message });
      continue;
    }
    sending.push(row);
    messages.push({
      eventId: row.event_id,
      routingKey: row.event_type,
      headers,
      body: encodeEnvelope({
        eventId: row.event_id,
        eventType: row.event_type,
        aggregateType: row.aggregate_type,
        aggregateId: row.aggregate_id,
        source: ctx.service,
        occurredAt: row.created_at.toISOString(),
        headersJson: row.headers,
        payloadJson: row.payload,
      }),
    });
  }
  return { park, sending, messages };
}

/**
 * Call `send` in `turn` (when lanes share turns) and pass the turn on as soon as it returns or
 * throws: not when the promise it returned settles (a publish's confirms are not waited for).
 */
async function inTurn<T>(turn: Promise<() => void> | undefined, send: () => T | Promise<T>): Promise<T> {
  const release = turn ? await turn : undefined;
  let sent: T | Promise<T>;
  try {
    sent = send();
  } finally {
    release?.();
  }
  return sent;
}

async function claimAndPublish(ctx: DrainContext, releaseClaim: () => void): Promise<BatchOutcome> {
  return ctx.sql.begin(async (tx) => {
    // Losing a published_at stamp to a server crash only republishes the row (at-least-once;
    // inboxes dedupe), so this commit need not wait for its WAL flush. (Sent with the claim,
    // in one round trip: a SET LOCAL counts at commit wherever it stands in the transaction.)
    const asyncCommit = tx`set local synchronous_commit = off`;
    // A drain's claim locks, and its stamp updates, rows a backlog wrote before the last
    // checkpoint: each page's first change logs the whole page. Compressed, as the sweep's are
    // (ADR-069), for this transaction only: the pool's sessions are shared (ADR-086). Sent ahead
    // of the claim in the same round trip, so it is in force when the claim locks its rows.
    const compress = ctx.walCompression ? tx`select set_config('wal_compression', ${ctx.walCompression}, true)` : undefined;
    // Row and byte bounded, locking only the rows it returns (sql/000005_outbox_claim.sql).
    const claim = tx<ClaimedRow[]>`select * from event_outbox_claim(${ctx.batchSize}, ${ctx.batchBytes}, ${horizonSql(tx, ctx.retention)})`;
    const [, , rows] = await Promise.all([asyncCommit, compress, claim]);
    if (rows.length === 0) {
      releaseClaim();
      return { result: { claimed: 0, published: 0, failed: 0, parked: 0, unavailable: 0 }, full: false };
    }
    const full = rows.length >= ctx.batchSize || Number(rows.at(-1)!.claimed_bytes) >= ctx.batchBytes;
    // This batch's place among the publish calls, taken before the next lane may claim: its
    // messages are built while that lane's claim runs, and handed to the transport (which sends
    // concurrent calls in call order) in claim order.
    const publishTurn = ctx.turn?.publish.take();
    releaseClaim();
    let prepared: PreparedBatch;
    try {
      prepared = prepareBatch(rows, ctx);
    } catch (error) {
      // Pass the turn on all the same, or every later batch waits forever.
      await inTurn(publishTurn, () => undefined);
      throw error;
    }
    const { park, sending, messages } = prepared;
    const outcomes = await inTurn<PublishOutcome[]>(publishTurn, () => (messages.length > 0 ? ctx.transport.publish(messages) : []));
    const published: string[] = [];
    const failed: Array<{ id: string; error: string }> = [];
    let unavailable = 0;
    outcomes.forEach((outcome, i) => {
      const row = sending[i]!;
      if (outcome.ok) published.push(row.id);
      else if (outcome.kind === 'too_large') park.push({ id: row.id, reason: 'oversize', error: outcome.error.message });
      else if (outcome.kind === 'rejected') failed.push({ id: row.id, error: outcome.error.message });
      else unavailable++;
    });

    if (published.length > 0) {
      // clock_timestamp(), not now(): now() is this transaction's start, which can precede the
      // created_at of a row committed after it began (the CHECK would refuse it).
      await tx`update event_outbox set published_at = clock_timestamp(), next_attempt_at = null where id = any(${published}::bigint[])`;
    }
    const parkedByFailure = failed.length > 0 ? await recordFailures(tx, failed, ctx.maxAttempts) : 0;
    if (park.length > 0) await parkRows(tx, park);

    const m = ctx.metrics;
    m?.outboxPublished.inc(published.length);
    if (failed.length) m?.outboxPublishFailures.inc({ kind: 'rejected' }, failed.length);
    if (unavailable) m?.outboxPublishFailures.inc({ kind: 'unavailable' }, unavailable);
    for (const p of park) m?.outboxPublishFailures.inc({ kind: p.reason === 'oversize' ? 'too_large' : p.reason });
    if (park.length > 0 || parkedByFailure > 0) {
      ctx.logger.warn({ parked: [...park.map((p) => ({ id: p.id, reason: p.reason, error: p.error }))], parkedAfterMaxAttempts: parkedByFailure }, 'outbox rows parked; redrive with redriveParked() after fixing the cause');
    }
    if (failed.length > 0) ctx.logger.warn({ failed: failed.length, firstError: failed[0]!.error }, 'outbox publish failures (counted, retried with backoff)');
    return { result: { claimed: rows.length, published: published.length, failed: failed.length - parkedByFailure, parked: park.length + parkedByFailure, unavailable }, full };
  });
}

/** Count an attempt; back off 2^attempts s (at most 5 min); park at OUTBOX_MAX_ATTEMPTS. Returns how many parked. */
async function recordFailures(tx: TransactionSql, failed: ReadonlyArray<{ id: string; error: string }>, maxAttempts: number): Promise<number> {
  const rows = await tx<{ parked: boolean }[]>`
    update event_outbox o
    set attempts = o.attempts + 1,
        last_error = u.error,
        last_attempt_at = clock_timestamp(),
        next_attempt_at = clock_timestamp() + make_interval(secs => least(300, 2 ^ o.attempts)),
        parked_at = case when o.attempts + 1 >= ${maxAttempts} then clock_timestamp() end,
        parked_reason = case when o.attempts + 1 >= ${maxAttempts} then 'max_attempts' end
    from unnest(${failed.map((f) => f.id)}::bigint[], ${failed.map((f) => f.error)}::text[]) as u(id, error)
    where o.id = u.id
    returning o.parked_at is not null as parked`;
  return rows.filter((r) => r.parked).length;
}

async function parkRows(tx: TransactionSql, park: ReadonlyArray<{ id: string; reason: ParkReason; error: string }>): Promise<void> {
  await tx`
    update event_outbox o
    set parked_at = clock_timestamp(), parked_reason = u.reason, last_error = u.error, last_attempt_at = clock_timestamp()
    from unnest(${park.map((p) => p.id)}::bigint[], ${park.map((p) => p.reason)}::text[], ${park.map((p) => p.error)}::text[]) as u(id, reason, error)
    where o.id = u.id`;
}
