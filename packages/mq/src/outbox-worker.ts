import { transactionWalCompression, type Sql, type WalCompressionMethod } from '@craig/db';
import pino, { type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { POLL_INTERVAL_MS, PRUNE_EVERY_TICKS, pruneJitter } from './cadence.ts';
import { Baton } from './internal/baton.ts';
import { drainBatch, type BatchOutcome, type DrainContext, type DrainResult, type DrainTurns } from './internal/drain.ts';
import { assertWindows, type RetentionWindows } from './internal/horizon.ts';
import { sleep } from './internal/sleep.ts';
import { mqMetrics, type MqMetrics } from './metrics.ts';
import type { PruneBatch } from './prune-table.ts';
import { pruneTransportTables, type PruneCycleResult, type TransportTable } from './transport-prune.ts';
import type { Transport } from './transport.ts';

export type { DrainResult } from './internal/drain.ts';

export interface OutboxWorkerOptions {
  /** The service name: connection names, logs, and the seed of the prune jitter. */
  readonly service: string;
  /** A pool on the service's database (the drain uses one connection per batch). */
  readonly sql: Sql;
  /** The same database's URL: each prune cycle opens a dedicated session on it. */
  readonly databaseUrl: string;
  readonly transport: Transport;
  /** Settings: EVENT_OUTBOX_RETENTION_DAYS / EVENT_INBOX_RETENTION_DAYS (0 disables). */
  readonly retention: RetentionWindows;
  /** Settings: OUTBOX_MAX_ATTEMPTS. */
  readonly maxAttempts: number;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Most rows one drain batch claims, at most {@link MAX_DRAIN_BATCH}; default {@link DEFAULT_DRAIN_BATCH}. */
  readonly batchSize?: number;
  /**
   * A drain batch's claim stops at the row that brings its payload and headers text to this
   * many bytes; default {@link DEFAULT_DRAIN_BATCH_BYTES}. With `drainLanes`, it bounds what a
   * backlog of large events can take: lanes × (this + one event) of claimed event text (about
   * three times that in memory, with the encoded messages and the transport's copies).
   */
  readonly batchBytes?: number;
  /**
   * Batches in flight at once while draining a backlog; default 2. Claims and publish calls
   * still go in id order (one batch's message building overlaps the next one's claim, and its
   * confirms and COMMIT the next ones'; ADR-078). The pool needs at least this many connections.
   */
  readonly drainLanes?: number;
  /** Sleep between ticks; default {@link POLL_INTERVAL_MS}. */
  readonly pollIntervalMs?: number;
  /** Ticks between prune cycles; default {@link PRUNE_EVERY_TICKS} (hourly). */
  readonly pruneEveryTicks?: number;
  /** Prune rows per statement (default 5,000) and per table per cycle (default 1,000,000). */
  readonly pruneBatchSize?: number;
  readonly pruneCap?: number;
  /** The prune session's `wal_compression` (ADR-069): default lz4; `false` leaves the server's setting. */
  readonly pruneWalCompression?: WalCompressionMethod | false;
  /**
   * `wal_compression` set locally in each drain transaction (ADR-086): default
   * {@link DEFAULT_DRAIN_WAL_COMPRESSION}; `false` leaves the server's setting, as does a server
   * that compresses already. A role that may not set it drains uncompressed and warns once.
   */
  readonly drainWalCompression?: WalCompressionMethod | false;
  /** After each prune batch: progress, and a seam for tests. */
  readonly onPruneBatch?: (table: TransportTable, batch: PruneBatch) => unknown;
  /** Longest wait between drains while the transport is unreachable; default 30 s. */
  readonly maxBackoffMs?: number;
}

/** Most rows one drain batch claims, by default. */
export const DEFAULT_DRAIN_BATCH = 4000;
/**
 * The largest drain batch: it bounds the rows one drain transaction holds locked while its
 * publish is in flight, and (with `batchBytes`) what one batch takes in memory.
 */
export const MAX_DRAIN_BATCH = 10_000;
/** Payload and headers text one drain batch claims, by default (it stops at the row reaching it). */
export const DEFAULT_DRAIN_BATCH_BYTES = 8 * 1024 * 1024;

/** How a drain transaction compresses its full-page images, by default (ADR-086). */
export const DEFAULT_DRAIN_WAL_COMPRESSION: WalCompressionMethod = 'lz4';

/** Ticks between refreshes of the pending/parked gauges. */
const GAUGE_EVERY_TICKS = 15;

/**
 * Publishes the outbox and enforces its retention. Each tick drains first (until the backlog is
 * gone or the transport is unreachable) and then, every `pruneEveryTicks` ticks from a phase
 * fixed by the service name, runs a prune cycle: a recovered worker publishes its backlog
 * before anything is deleted (seed 000 Step 4).
 *
 * An unreachable transport costs a row nothing: no attempt is counted, the worker backs off
 * (exponentially, up to `maxBackoffMs`) and tries again. Only a failure of the message itself
 * (a nack, a channel error while it was in flight) counts toward OUTBOX_MAX_ATTEMPTS.
 */
export class OutboxWorker {
  private readonly logger: Logger;
  private readonly metrics: MqMetrics;
  private readonly everyTicks: number;
  private readonly pollIntervalMs: number;
  private readonly maxBackoffMs: number;
  private tickNo: number;
  private backoffMs = 0;
  private backoffUntil = 0;
  /** What the drain transactions set, asked of the server once (ADR-086); unset again when asking failed. */
  private drainWal: Promise<WalCompressionMethod | undefined> | undefined;

  constructor(private readonly options: OutboxWorkerOptions) {
    assertWindows(options.retention);
    if (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1) throw new RangeError(`maxAttempts must be a positive integer: ${options.maxAttempts}`);
    for (const [name, value] of [['batchSize', options.batchSize], ['batchBytes', options.batchBytes], ['drainLanes', options.drainLanes]] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw new RangeError(`${name} must be a positive integer: ${value}`);
    }
    if (options.batchSize !== undefined && options.batchSize > MAX_DRAIN_BATCH) throw new RangeError(`batchSize must be at most ${MAX_DRAIN_BATCH}: ${options.batchSize}`);
    this.logger = options.logger ?? pino({ level: 'silent' });
    this.metrics = mqMetrics(options.registry);
    this.everyTicks = options.pruneEveryTicks ?? PRUNE_EVERY_TICKS;
    this.pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.tickNo = pruneJitter(options.service, this.everyTicks);
    this.metrics.pruneInterval.set((this.everyTicks * this.pollIntervalMs) / 1000);
    // "Not pruned for two cadences" counts from the worker's start until its first cycle.
    this.metrics.pruneLastSuccess.set(Date.now() / 1000);
  }

  /** The tick counter (starts at the service's jitter; a prune runs when it is a multiple of `pruneEveryTicks`). */
  get tickNumber(): number {
    return this.tickNo;
  }

  /** Current wait between drains caused by an unreachable transport (0 when healthy). */
  get backoff(): number {
    return this.backoffMs;
  }

  /** The `wal_compression` each drain transaction sets: asked once, a refusal warned about once. */
  private drainWalCompression(): Promise<WalCompressionMethod | undefined> {
    this.drainWal ??= transactionWalCompression(this.options.sql, this.options.drainWalCompression ?? DEFAULT_DRAIN_WAL_COMPRESSION).then(
      (wal) => {
        if (wal.refused !== undefined) {
          this.logger.warn({ reason: wal.refused }, 'outbox drain: its transactions may not set wal_compression, so they write uncompressed full-page images (grant it as a superuser: GRANT SET ON PARAMETER wal_compression TO <runtime role>; docs/adr/086-drain-wal-compression.md)');
        }
        return wal.method;
      },
      (error: unknown) => {
        // Asked again by the next drain (the database was unreachable, say).
        this.drainWal = undefined;
        throw error;
      },
    );
    return this.drainWal;
  }

  private async context(turn?: DrainTurns): Promise<DrainContext> {
    const walCompression = await this.drainWalCompression();
    return {
      sql: this.options.sql,
      transport: this.options.transport,
      service: this.options.service,
      retention: this.options.retention,
      maxAttempts: this.options.maxAttempts,
      batchSize: this.options.batchSize ?? DEFAULT_DRAIN_BATCH,
      batchBytes: this.options.batchBytes ?? DEFAULT_DRAIN_BATCH_BYTES,
      logger: this.logger,
      metrics: this.metrics,
      ...(turn ? { turn } : {}),
      ...(walCompression ? { walCompression } : {}),
    };
  }

  /** Publish one batch of pending rows, oldest first (see the package README for the guarantees). */
  async drainOnce(): Promise<DrainResult> {
    return (await drainBatch(await this.context())).result;
  }

  /**
   * Publish until nothing is pending (or the transport is unreachable, or `signal` aborts),
   * `drainLanes` batches in flight. Returns the totals; throws what a batch threw.
   */
  async drain(signal?: AbortSignal): Promise<DrainResult> {
    const lanes = this.options.drainLanes ?? 2;
    // One context for the whole drain: its lanes share the turns and everything else.
    const context = await this.context({ claim: new Baton(), publish: new Baton() });
    const total = { claimed: 0, published: 0, failed: 0, parked: 0, unavailable: 0 };
    let stop = false;
    let failure: { error: unknown } | undefined;
    const lane = async () => {
      while (!stop && !signal?.aborted) {
        let batch: BatchOutcome;
        try {
          batch = await drainBatch(context);
        } catch (error) {
          failure ??= { error };
          stop = true;
          return;
        }
        const r = batch.result;
        for (const k of Object.keys(total) as Array<keyof DrainResult>) total[k] += r[k];
        // A claim that was not full took every due row there was (this tick is done).
        if (r.unavailable > 0 || !batch.full) stop = true;
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
    if (failure) throw failure.error;
    return total;
  }

  /** One prune cycle now (see {@link pruneTransportTables}), counted in `event_prune_cycles_total{status}`. */
  async pruneExpired(options: { signal?: AbortSignal } = {}): Promise<PruneCycleResult> {
    let result: PruneCycleResult;
    try {
      result = await this.pruneCycle(options);
    } catch (error) {
      this.metrics.pruneCycles.inc({ status: 'failed' });
      throw error;
    }
    const status = result.skipped ? 'skipped' : result.aborted ? 'aborted' : 'completed';
    this.metrics.pruneCycles.inc({ status });
    if (status === 'completed') this.metrics.pruneLastSuccess.set(Date.now() / 1000);
    return result;
  }

  private pruneCycle(options: { signal?: AbortSignal }): Promise<PruneCycleResult> {
    return pruneTransportTables({
      databaseUrl: this.options.databaseUrl,
      service: this.options.service,
      retention: this.options.retention,
      registry: this.options.registry,
      logger: this.logger,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(this.options.pruneBatchSize ? { batchSize: this.options.pruneBatchSize } : {}),
      ...(this.options.pruneCap ? { cap: this.options.pruneCap } : {}),
      ...(this.options.pruneWalCompression === undefined ? {} : { walCompression: this.options.pruneWalCompression }),
      ...(this.options.onPruneBatch ? { onBatch: this.options.onPruneBatch } : {}),
    });
  }

  /** Count pending and parked rows into `event_outbox_pending` / `event_outbox_parked`. */
  async refreshGauges(): Promise<{ pending: number; parked: number }> {
    const row = await outboxBacklog(this.options.sql);
    this.metrics.outboxPending.set(row.pending);
    this.metrics.outboxParked.set(row.parked);
    // Best effort: a transport that is down keeps the last value.
    await this.options.transport.deadLetterCount().then(
      (n) => this.metrics.deadLetters.set(n),
      () => undefined,
    );
    return row;
  }

  /**
   * One iteration of the loop: drain until idle (unless backing off), then prune if this tick
   * is due. Never throws: failures are logged and the loop goes on.
   */
  async tick(signal?: AbortSignal): Promise<{ published: number; drainSkipped: boolean; pruned?: PruneCycleResult }> {
    let published = 0;
    const drainSkipped = performance.now() < this.backoffUntil;
    if (!drainSkipped) published = await this.drainUntilIdle(signal);
    let pruned: PruneCycleResult | undefined;
    // Drain FIRST, then prune (seed 000 Step 4).
    if (this.tickNo % this.everyTicks === 0 && !signal?.aborted) {
      try {
        pruned = await this.pruneExpired(signal ? { signal } : {});
      } catch (error) {
        this.logger.warn({ err: error }, 'event retention prune failed');
      }
    }
    if (pruned || this.tickNo % GAUGE_EVERY_TICKS === 0) await this.refreshGauges().catch((error: unknown) => this.logger.warn({ err: error }, 'outbox gauge refresh failed'));
    // Cadence only; kept below everyTicks so it never grows without bound.
    this.tickNo = (this.tickNo + 1) % this.everyTicks;
    return { published, drainSkipped, ...(pruned ? { pruned } : {}) };
  }

  /** Tick every `pollIntervalMs` until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.logger.info({ service: this.options.service, pruneEveryTicks: this.everyTicks, firstPruneInTicks: (this.everyTicks - this.tickNo) % this.everyTicks, retention: this.options.retention }, 'outbox worker started');
    while (await sleep(this.pollIntervalMs, signal)) await this.tick(signal);
    this.logger.info({ service: this.options.service }, 'outbox worker stopped');
  }

  private async drainUntilIdle(signal?: AbortSignal): Promise<number> {
    let result: DrainResult;
    try {
      result = await this.drain(signal);
    } catch (error) {
      this.backOff(error, 'outbox drain failed');
      return 0;
    }
    if (result.unavailable > 0) {
      this.backOff(undefined, 'transport unavailable; outbox rows stay pending (no attempt counted)');
      return result.published;
    }
    if (this.backoffMs > 0) this.logger.info({ afterBackoffMs: this.backoffMs }, 'outbox drain recovered');
    this.backoffMs = 0;
    this.backoffUntil = 0;
    return result.published;
  }

  private backOff(error: unknown, message: string): void {
    this.backoffMs = Math.min(this.maxBackoffMs, Math.max(this.pollIntervalMs, this.backoffMs * 2));
    this.backoffUntil = performance.now() + this.backoffMs;
    this.logger.warn({ err: error, retryInMs: this.backoffMs }, message);
  }
}

export interface SpawnedOutboxWorker {
  readonly worker: OutboxWorker;
  /** Resolves when the loop has stopped after `signal` aborted. */
  readonly stopped: Promise<void>;
}

/** Start an {@link OutboxWorker} loop until `signal` aborts: what a service composes. */
export function spawnOutboxWorker(options: OutboxWorkerOptions & { readonly signal: AbortSignal }): SpawnedOutboxWorker {
  const worker = new OutboxWorker(options);
  return { worker, stopped: worker.run(options.signal) };
}

/** Outbox rows not yet delivered: `pending` (the worker will publish them) and `parked` (it never will, until redriven). */
export async function outboxBacklog(sql: Sql): Promise<{ pending: number; parked: number }> {
  const [row] = await sql<{ pending: number; parked: number }[]>`
    select (select count(*) from event_outbox where published_at is null and parked_at is null)::int as pending,
           (select count(*) from event_outbox where parked_at is not null)::int as parked`;
  return row!;
}
