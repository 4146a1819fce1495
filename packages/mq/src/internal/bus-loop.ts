import { classifyPgError, type Sql, type TransactionSql } from '@craig/db';
import type { Logger } from 'pino';
import type { CloseOptions, Subscription } from '../transport.ts';
import { InFlight } from './in-flight.ts';
import { sleep } from './sleep.ts';

/** NOTIFY channel of the bus; the payload is the consumer whose queue got rows. */
export const BUS_CHANNEL = 'craig_bus';
/** Payload for new dead letters (consumer names start with a letter, so this never collides). */
export const DEAD_LETTER_WAKE = '#dead-letter';

const MAX_ERROR_TEXT = 4096;

export interface Claimed {
  readonly id: string;
  readonly attempts: number;
}

/**
 * One polling loop over one queue of the bus. Each turn claims up to `prefetch` rows with
 * `SKIP LOCKED` in a transaction, admits them (the event loop counts each delivery, and
 * dead-letters instead what was delivered too often), runs the handlers of the admitted rows,
 * and settles every row in that same transaction. A consumer that dies mid-batch takes its
 * transaction with it: the rows are unlocked and the next instance gets them. Wakes on
 * NOTIFY, else every `pollIntervalMs`.
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
      const claimed = await this.claim(tx);
      if (claimed.length === 0) return 0;
      const rows = await this.admit(tx, claimed);
      const outcomes = await Promise.all(rows.map((row) => this.inFlight.track(this.handle(row).then(() => undefined, (error: unknown) => error))));
      const acked: string[] = [];
      for (const [i, row] of rows.entries()) {
        const error = outcomes[i];
        if (error === undefined) acked.push(row.id);
        else await this.failed(tx, row, error);
      }
      if (acked.length > 0) await this.ack(tx, acked);
      return claimed.length;
    });
  }

  protected abstract claim(tx: TransactionSql): Promise<Row[]>;
  /** The claimed rows whose handlers run (all of them unless a subclass settles some itself). */
  protected async admit(_tx: TransactionSql, rows: Row[]): Promise<Row[]> {
    return rows;
  }
  protected abstract handle(row: Row): Promise<void>;
  protected abstract ack(tx: TransactionSql, ids: string[]): Promise<void>;
  protected abstract failed(tx: TransactionSql, row: Row, error: unknown): Promise<void>;
}

export function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_TEXT);
}
