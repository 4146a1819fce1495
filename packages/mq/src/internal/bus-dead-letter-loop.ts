import type { Sql, TransactionSql } from '@craig/db';
import type { Logger } from 'pino';
import type { DeadLetter } from '../transport.ts';
import { BusLoop, DEAD_LETTER_WAKE, type Claimed } from './bus-loop.ts';

interface DeadLetterRow extends Claimed {
  readonly consumer: string;
  readonly event_id: string;
  readonly routing_key: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly error: string;
  readonly dead_lettered_at: Date;
  readonly dlq_attempts: number;
  readonly deliveries: number;
}

/** The fleet's dead letters: `bus_dead_letters`, kept until a handler accepts them. */
export class BusDeadLetterLoop extends BusLoop<DeadLetterRow> {
  constructor(
    sql: Sql,
    prefetch: number,
    pollIntervalMs: number,
    logger: Logger,
    onClosed: (loop: BusLoop<DeadLetterRow>) => void,
    private readonly retryDelayMs: (attempt: number) => number,
    private readonly handler: (deadLetter: DeadLetter) => Promise<void>,
  ) {
    super(DEAD_LETTER_WAKE, sql, prefetch, pollIntervalMs, logger, onClosed);
  }

  protected claim(tx: TransactionSql): Promise<DeadLetterRow[]> {
    return tx<DeadLetterRow[]>`
      select id::text, consumer, event_id::text, routing_key, body, headers, error, attempts, deliveries, dead_lettered_at, dlq_attempts
      from bus_dead_letters
      where visible_at <= now()
      order by bus_dead_letters.id
      limit ${this.prefetch}
      for update skip locked`;
  }

  protected handle(row: DeadLetterRow): Promise<void> {
    return this.handler({
      consumer: row.consumer,
      eventId: row.event_id,
      routingKey: row.routing_key,
      body: row.body,
      headers: row.headers,
      error: row.error,
      attempts: row.attempts,
      deliveries: row.deliveries,
      deadLetteredAt: row.dead_lettered_at.toISOString(),
    });
  }

  protected async ack(tx: TransactionSql, ids: string[]): Promise<void> {
    await tx`delete from bus_dead_letters where id = any(${ids}::bigint[])`;
  }

  protected async failed(tx: TransactionSql, row: DeadLetterRow, error: unknown): Promise<void> {
    const attempt = row.dlq_attempts + 1;
    this.logger.warn({ eventId: row.event_id, attempt, err: error }, 'dead-letter handler failed; it will see the message again');
    await tx`
      update bus_dead_letters
      set dlq_attempts = ${attempt}, visible_at = now() + make_interval(secs => ${this.retryDelayMs(attempt) / 1000})
      where id = ${row.id}`;
  }
}
