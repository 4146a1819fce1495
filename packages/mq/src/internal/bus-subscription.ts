import { classifyPgError, type Sql, type TransactionSql } from '@craig/db';
import type { Logger } from 'pino';
import { InvalidEventError } from '../errors.ts';
import type { CloseOptions, DeadLetter, Delivery, Subscription } from '../transport.ts';
import { InFlight } from './in-flight.ts';
import { sleep } from './sleep.ts';

/** NOTIFY channel of the bus; the payload is the consumer whose queue got rows. */
export const BUS_CHANNEL = 'craig_bus';
/** Payload for new dead letters (consumer names start with a letter, so this never collides). */
export const DEAD_LETTER_WAKE = '#dead-letter';

const MAX_ERROR_TEXT = 4096;

interface Claimed {
  readonly id: string;
  readonly attempts: number;
}

/**
 * One polling loop over one queue of the bus. Each turn claims up to `prefetch` rows with
 * `FOR UPDATE SKIP LOCKED` in a transaction, runs the handlers, and settles every row in that
 * same transaction. A consumer that dies mid-batch takes its transaction with it: the rows are
 * unlocked and the next instance gets them. Wakes on NOTIFY, else every `pollIntervalMs`.
 */
export abstract class BusLoop<Row extends Claimed> implements Subscription {
  private closed = false;
  private woken = false;
  private wakeUp: (() => void) | undefined;
  private readonly inFlight = new InFlight();
  private readonly stop = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    readonly consumer: string,
    protected readonly sql: Sql,
    protected readonly prefetch: number,
    private readonly pollIntervalMs: number,
    protected readonly logger: Logger,
    private readonly onClosed: (loop: BusLoop<Row>) => void,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  /** A notification (or a reconnect of the listener) says there may be rows. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  async close(options: CloseOptions = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClosed(this);
    this.wake();
    const graceMs = options.graceMs ?? 10_000;
    const timer = new AbortController();
    await Promise.race([this.loop, sleep(graceMs, timer.signal)]);
    timer.abort();
    this.stop.abort();
    // After the grace period the connection is dropped mid-transaction: the server rolls the
    // claim back and the rows go to another instance.
    await this.sql.end({ timeout: 0 });
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      let claimed: number;
      // A wake-up that arrives during the turn must not be lost to the idle wait after it.
      this.woken = false;
      try {
        claimed = await this.turn();
        failures = 0;
      } catch (error) {
        if (this.closed) break;
        failures++;
        const delay = Math.min(30_000, 100 * 2 ** Math.min(failures, 9));
        this.logger.warn({ err: error, consumer: this.consumer, kind: classifyPgError(error).kind, retryInMs: delay }, 'bus consumer turn failed');
        await sleep(delay, this.stop.signal);
        continue;
      }
      if (claimed === 0 && !this.closed && !this.woken) await this.idle();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.pollIntervalMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = undefined;
        done();
      };
    });
  }

  private turn(): Promise<number> {
    return this.sql.begin(async (tx) => {
      const rows = await this.claim(tx);
      if (rows.length === 0) return 0;
      const outcomes = await Promise.all(rows.map((row) => this.inFlight.track(this.handle(row).then(() => undefined, (error: unknown) => error))));
      const acked: string[] = [];
      for (const [i, row] of rows.entries()) {
        const error = outcomes[i];
        if (error === undefined) acked.push(row.id);
        else await this.failed(tx, row, error);
      }
      if (acked.length > 0) await this.ack(tx, acked);
      return rows.length;
    });
  }

  protected abstract claim(tx: TransactionSql): Promise<Row[]>;
  protected abstract handle(row: Row): Promise<void>;
  protected abstract ack(tx: TransactionSql, ids: string[]): Promise<void>;
  protected abstract failed(tx: TransactionSql, row: Row, error: unknown): Promise<void>;
}

export function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_TEXT);
}

interface DeliveryRow extends Claimed {
  readonly event_id: string;
  readonly routing_key: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A consumer's queue: `bus_deliveries` rows of that consumer. */
export class BusEventLoop extends BusLoop<DeliveryRow> {
  constructor(
    consumer: string,
    sql: Sql,
    prefetch: number,
    pollIntervalMs: number,
    logger: Logger,
    onClosed: (loop: BusLoop<DeliveryRow>) => void,
    private readonly maxRetries: number,
    private readonly retryDelayMs: (attempt: number) => number,
    private readonly handler: (delivery: Delivery) => Promise<void>,
  ) {
    super(consumer, sql, prefetch, pollIntervalMs, logger, onClosed);
  }

  protected claim(tx: TransactionSql): Promise<DeliveryRow[]> {
    return tx<DeliveryRow[]>`
      select id::text, event_id::text, routing_key, body, headers, attempts
      from bus_deliveries
      where consumer = ${this.consumer} and visible_at <= now()
      order by bus_deliveries.id
      limit ${this.prefetch}
      for update skip locked`;
  }

  protected handle(row: DeliveryRow): Promise<void> {
    return this.handler({
      consumer: this.consumer,
      eventId: row.event_id,
      routingKey: row.routing_key,
      body: row.body,
      headers: row.headers,
      attempt: row.attempts + 1,
      redelivered: row.attempts > 0,
    });
  }

  protected async ack(tx: TransactionSql, ids: string[]): Promise<void> {
    await tx`delete from bus_deliveries where id = any(${ids}::bigint[])`;
  }

  protected async failed(tx: TransactionSql, row: DeliveryRow, error: unknown): Promise<void> {
    const attempt = row.attempts + 1;
    // Not an envelope at all: no retry can help, dead-letter it now.
    if (error instanceof InvalidEventError || attempt > this.maxRetries) {
      await tx`
        with moved as (delete from bus_deliveries where id = ${row.id} returning *)
        insert into bus_dead_letters (consumer, event_id, routing_key, body, headers, error, attempts, enqueued_at)
        select consumer, event_id, routing_key, body, headers, ${errorText(error)}, ${attempt}, enqueued_at from moved`;
      await tx`select pg_notify(${BUS_CHANNEL}, ${DEAD_LETTER_WAKE})`;
      this.logger.warn({ consumer: this.consumer, eventId: row.event_id, attempts: attempt, err: error }, 'message dead-lettered');
      return;
    }
    await tx`
      update bus_deliveries
      set attempts = ${attempt}, last_error = ${errorText(error)},
          visible_at = now() + make_interval(secs => ${this.retryDelayMs(attempt) / 1000})
      where id = ${row.id}`;
  }
}

interface DeadLetterRow extends Claimed {
  readonly consumer: string;
  readonly event_id: string;
  readonly routing_key: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly error: string;
  readonly dead_lettered_at: Date;
  readonly dlq_attempts: number;
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
      select id::text, consumer, event_id::text, routing_key, body, headers, error, attempts, dead_lettered_at, dlq_attempts
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
