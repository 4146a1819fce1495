import type { Sql, TransactionSql } from '@craig/db';
import type { Logger } from 'pino';
import { InvalidEventError } from '../errors.ts';
import { deliveryLimitError, type Delivery } from '../transport.ts';
import { BUS_CHANNEL, BusLoop, DEAD_LETTER_WAKE, errorText, type Claimed } from './bus-loop.ts';

interface DeliveryRow extends Claimed {
  readonly event_id: string;
  readonly routing_key: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** Hand-outs counted so far (`bus_delivery_counts`); after `admit`, including this one. */
  deliveries: number;
}

export interface BusEventLoopOptions {
  readonly consumer: string;
  /** The loop's own connection: its claim transaction stays open while the handlers run. */
  readonly sql: Sql;
  /** Another connection (the transport's pool), where deliveries are counted in autocommit. */
  readonly counts: Sql;
  readonly prefetch: number;
  readonly pollIntervalMs: number;
  readonly logger: Logger;
  readonly onClosed: (loop: BusLoop<DeliveryRow>) => void;
  readonly maxRetries: number;
  readonly maxDeliveries: number;
  readonly retryDelayMs: (attempt: number) => number;
  readonly handler: (delivery: Delivery) => Promise<void>;
}

/**
 * A consumer's queue: `bus_deliveries` rows of that consumer. Every hand-out is counted in
 * `bus_delivery_counts` before the handler runs; `deliveries - attempts` (hand-outs minus the
 * attempts that threw, whose failure the claim transaction recorded) is how many times the
 * message was handed out and never settled, because its consumer died or timed out.
 */
export class BusEventLoop extends BusLoop<DeliveryRow> {
  private readonly counts: Sql;
  private readonly maxRetries: number;
  private readonly maxDeliveries: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly handler: (delivery: Delivery) => Promise<void>;

  constructor(options: BusEventLoopOptions) {
    super(options.consumer, options.sql, options.prefetch, options.pollIntervalMs, options.logger, options.onClosed);
    this.counts = options.counts;
    this.maxRetries = options.maxRetries;
    this.maxDeliveries = options.maxDeliveries;
    this.retryDelayMs = options.retryDelayMs;
    this.handler = options.handler;
  }

  /**
   * A message that was handed out and never settled (its consumer died, or the claim's commit
   * was lost) is a *suspect*: it is claimed alone, one per turn, before anything else, so if it
   * kills its consumer again the death counts against it only, not against batch-mates it
   * happened to share a claim with (they were innocent and are counted once, then taken alone
   * too, and settle). Otherwise a batch in id order. The batch is gated on there being no
   * suspect, so a turn that takes a suspect locks nothing else. Found through the small count
   * table (this consumer's deliveries in flight), not by walking the queue.
   *
   * `FOR NO KEY UPDATE`, not `FOR UPDATE`: the count row's foreign-key check takes a key-share
   * lock on the delivery, from another connection, while this transaction holds the claim.
   */
  protected claim(tx: TransactionSql): Promise<DeliveryRow[]> {
    return tx<DeliveryRow[]>`
      with suspect as (
        select d.id
        from bus_delivery_counts c join bus_deliveries d on d.id = c.delivery_id
        where c.consumer = ${this.consumer} and c.deliveries > d.attempts and d.visible_at <= now()
        order by c.delivery_id
        limit 1
        for no key update of d skip locked
      ), batch as (
        select d.id
        from bus_deliveries d
        where d.consumer = ${this.consumer} and d.visible_at <= now() and not exists (select from suspect)
        order by d.id
        limit ${this.prefetch}
        for no key update skip locked
      )
      select d.id::text, d.event_id::text, d.routing_key, d.body, d.headers, d.attempts, coalesce(c.deliveries, 0) as deliveries
      from bus_deliveries d left join bus_delivery_counts c on c.delivery_id = d.id
      where d.id in (select id from suspect union all select id from batch)
      order by d.id`;
  }

  /**
   * Dead-letter, in the claim transaction and without running the handler, every claimed row
   * handed out `maxDeliveries` times without being settled; count one more delivery of each of
   * the others, committed before their handlers run.
   *
   * The count is an autocommit upsert on another connection, so it survives whatever happens
   * to the claim transaction after it:
   * - The consumer dies (or times out: the server ends the idle claim) while the handler runs:
   *   the claim rolls back, the count stays. That is the point.
   * - It dies between the claim and the count: nothing was counted and no handler ran; the
   *   claim rolls back and the row is claimed again, uncounted. It dies between the count's
   *   commit and the handler starting: one delivery counted that no handler saw. So the count
   *   can run ahead by one per such death, never behind: the bound always holds.
   * - A lost commit: the count's own (its acknowledgement lost with the connection) fails the
   *   turn before any handler runs, so at worst a delivery is counted that never happened, as
   *   above. The claim's (an ack lost after the handler resolved) leaves the row and its count:
   *   it is handed out again, counted again, and the inbox acknowledges the duplicate. The
   *   count is as durable as any bus commit (publishing already needs synchronous_commit on).
   * - A second replica cannot count the same delivery: only the claim's lock holder counts,
   *   and the lock is only released, with the claim, after the count committed or failed.
   *   (A consumer whose claim the server ended may still be running its handler after another
   *   replica claimed the row: both hand-outs are real, and both are counted.)
   * Acknowledging or dead-lettering deletes the delivery and, by the foreign key's cascade,
   * its count in the same transaction; a failed attempt keeps it, and its `attempts` goes up
   * with the count, so it is not counted as unsettled.
   */
  protected override async admit(tx: TransactionSql, rows: DeliveryRow[]): Promise<DeliveryRow[]> {
    const admitted: DeliveryRow[] = [];
    for (const row of rows) {
      if (row.deliveries - row.attempts >= this.maxDeliveries) await this.deadLetter(tx, row, deliveryLimitError(row.deliveries), row.attempts + 1, row.deliveries);
      else admitted.push(row);
    }
    if (admitted.length === 0) return admitted;
    const counted = await this.counts<{ delivery_id: string; deliveries: number }[]>`
      insert into bus_delivery_counts (delivery_id, consumer, deliveries)
      select id, ${this.consumer}, 1 from unnest(${admitted.map((r) => r.id)}::bigint[]) as ids (id)
      on conflict (delivery_id) do update set deliveries = bus_delivery_counts.deliveries + 1
      returning delivery_id::text, deliveries`;
    const byId = new Map(counted.map((c) => [c.delivery_id, c.deliveries]));
    for (const row of admitted) row.deliveries = byId.get(row.id)!;
    return admitted;
  }

  protected handle(row: DeliveryRow): Promise<void> {
    return this.handler({
      consumer: this.consumer,
      eventId: row.event_id,
      routingKey: row.routing_key,
      body: row.body,
      headers: row.headers,
      attempt: row.attempts + 1,
      deliveries: row.deliveries,
      redelivered: row.deliveries > 1,
    });
  }

  protected async ack(tx: TransactionSql, ids: string[]): Promise<void> {
    await tx`delete from bus_deliveries where id = any(${ids}::bigint[])`;
  }

  protected async failed(tx: TransactionSql, row: DeliveryRow, error: unknown): Promise<void> {
    const attempt = row.attempts + 1;
    // Not an envelope at all: no retry can help, dead-letter it now.
    if (error instanceof InvalidEventError || attempt > this.maxRetries) return this.deadLetter(tx, row, errorText(error), attempt, row.deliveries, error);
    await tx`
      update bus_deliveries
      set attempts = ${attempt}, last_error = ${errorText(error)},
          visible_at = now() + make_interval(secs => ${this.retryDelayMs(attempt) / 1000})
      where id = ${row.id}`;
  }

  private async deadLetter(tx: TransactionSql, row: DeliveryRow, error: string, attempts: number, deliveries: number, cause?: unknown): Promise<void> {
    await tx`
      with moved as (delete from bus_deliveries where id = ${row.id} returning *)
      insert into bus_dead_letters (consumer, event_id, routing_key, body, headers, error, attempts, deliveries, enqueued_at)
      select consumer, event_id, routing_key, body, headers, ${error}, ${attempts}, ${deliveries}, enqueued_at from moved`;
    await tx`select pg_notify(${BUS_CHANNEL}, ${DEAD_LETTER_WAKE})`;
    this.logger.warn({ consumer: this.consumer, eventId: row.event_id, attempts, deliveries, ...(cause === undefined ? { error } : { err: cause }) }, 'message dead-lettered');
  }
}
