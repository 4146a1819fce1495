import { once } from 'node:events';
import { createGzip, type ZlibOptions } from 'node:zlib';
import type { Sql } from '@craig/db';
import { ForeignObjectError, StoreError, type BlobCreateResult } from '@craig/store';
import type { Logger } from 'pino';
import { archiveKey } from '../archive-key.ts';
import type { ArchiveEngineOptions, TableOutcome, TableReport } from '../engine.ts';
import { BatchCountMismatchError, RetentionError } from '../errors.ts';
import { BODY_PIECE_BYTES, pruneArchived, selectBatch, type BodySink, type LedgerEntry, type SelectedBatch } from './batch-sql.ts';
import type { TablePlan } from './catalog.ts';
import type { ArchiveMetrics, BatchOutcome } from './metrics.ts';

/** zlib's output chunk: its default 16 KB costs a main-thread callback each. */
const GZIP_CHUNK = 1 << 20;

/**
 * Batches selected but not yet committed. Bounds memory (a few batches, never the table) while
 * the database (select, commit) and the object store (gzip, write, verify) work at once.
 */
export const PIPELINE_DEPTH = 3;
/** A table's first batch, before its bytes per row are known. */
export const FIRST_BATCH_ROWS = 5_000;

export interface EngineContext {
  readonly options: ArchiveEngineOptions;
  readonly logger: Logger;
  readonly metrics: ArchiveMetrics;
  readonly cap: number;
  readonly level: number;
  readonly maxObjectBytes: number;
  readonly newId: () => string;
}

export interface TableRun {
  readonly report: TableReport;
  /** The store failed in a way the next table would only meet again (down, out of time). */
  readonly storeDown: boolean;
}

type Failure = { readonly error: NonNullable<TableReport['error']>; readonly storeDown: boolean };

interface InFlight {
  /** The batch's ids and span (its body went to the compressor as it was read). */
  readonly batch: SelectedBatch;
  readonly archiveId: string;
  readonly key: string;
  readonly started: number;
  readonly selectMs: number;
  /** Filled in as the phases finish (the profile). */
  readonly times: { gzipMs: number; storeMs: number };
  /** gzip + digest-verified create; never rejects. */
  readonly stored: Promise<BlobCreateResult | Failure>;
}

/** The two connections of a cycle: reads on one, the lease and every commit on the other. */
export interface CycleConnections {
  /** Batch selects (plain reads: row versions are pinned by `xmin`, not by a lock). */
  readonly read: Sql;
  /** The dedicated session holding the lease: ledger rows and deletes only happen on it. */
  readonly write: Sql;
}

/**
 * Archive one table as a pipeline over the keyset. A producer selects batch after batch (keys
 * after the last selected) on the read connection and starts each one's gzip and
 * digest-verified create at once; the consumer commits them in key order on the lease session.
 * So the database selects batch N+2 while the store writes N+1 and the ledger+delete of N
 * commits. The safety argument is per batch and unchanged: a batch's rows are deleted only in
 * its own commit, only after its object is written and verified, and only at the row versions
 * its select saw. The first failure stops the table; batches still in flight are not committed
 * (their objects, if written, are orphans that verification lists; their rows stay hot).
 */
export async function archiveTable(ctx: EngineContext, db: CycleConnections, plan: TablePlan, signal: AbortSignal): Promise<TableRun> {
  const { spec } = plan;
  const hot = Math.max(ctx.options.hotWindowDays, spec.hotWindowDays ?? 0);
  let rows = 0;
  let bytes = 0;
  let batches = 0;
  let selected = 0;
  const window: InFlight[] = [];
  const pool = new PiecePool();
  let stop = false;
  let producerDone = false;
  let selectError: unknown;
  let spaceFreed: (() => void) | undefined;
  let itemAdded: (() => void) | undefined;
  const notify = (which: 'space' | 'item') => {
    const wake = which === 'space' ? spaceFreed : itemAdded;
    if (which === 'space') spaceFreed = undefined;
    else itemAdded = undefined;
    wake?.();
  };

  const producer = (async () => {
    let after: string | undefined;
    // Rows per batch: the spec's bound, and the object byte bound at the last batch's row width.
    let rowsForBytes = FIRST_BATCH_ROWS;
    try {
      while (!stop && !signal.aborted && selected < ctx.cap) {
        if (window.length >= PIPELINE_DEPTH) {
          await new Promise<void>((resolve) => (spaceFreed = resolve));
          continue;
        }
        const limit = Math.min(spec.batchSize, rowsForBytes, ctx.cap - selected);
        const selectStarted = performance.now();
        // The rows are compressed as they arrive: only the object's gzip bytes are ever whole.
        const compressor = compress(ctx.level, pool);
        let batch: SelectedBatch;
        try {
          batch = await selectBatch(db.read, plan, hot, limit, after, compressor);
        } catch (error) {
          compressor.discard();
          throw error;
        }
        const selectMs = performance.now() - selectStarted;
        if (batch.count === 0 || stop) {
          compressor.discard();
          break;
        }
        selected += batch.count;
        after = batch.maxKey;
        rowsForBytes = Math.max(1, Math.floor(ctx.maxObjectBytes / Math.max(1, batch.rawBytes / batch.count)));
        window.push(store(ctx, spec.table, batch, compressor.finish(), selectMs, signal));
        notify('item');
        if (batch.count < limit) break;
      }
    } catch (error) {
      selectError = error;
    } finally {
      producerDone = true;
      notify('item');
    }
  })();

  const done = async (outcome: TableOutcome, failure?: Failure): Promise<TableRun> => {
    stop = true;
    notify('space');
    await producer;
    // Let every write in flight settle before the session (and the lease) can go away. A
    // batch written but not committed (an earlier one failed) leaves an orphan: say which.
    for (const flight of window.splice(0)) {
      const stored = await flight.stored;
      if ('error' in stored) continue;
      ctx.metrics.batches.inc({ table: spec.table, outcome: 'discarded' });
      ctx.logger.warn({ table: spec.table, archiveId: flight.archiveId, key: flight.key, rows: flight.batch.count, outcome: 'discarded' }, 'archive batch');
    }
    return { report: { table: spec.table, rows, bytes, batches, outcome, ...(failure ? { error: failure.error } : {}) }, storeDown: failure?.storeDown ?? false };
  };

  for (;;) {
    const flight = window[0];
    if (!flight) {
      if (producerDone) break;
      await new Promise<void>((resolve) => (itemAdded = resolve));
      continue;
    }
    const waitStarted = performance.now();
    const stored = await flight.stored;
    if ('error' in stored) return done(signal.aborted ? 'aborted' : 'failed', stored);
    const commitStarted = performance.now();
    const failure = await commit(ctx, db.write, plan, hot, flight, stored);
    if (!failure) {
      ctx.options.onBatchProfile?.({
        table: spec.table,
        rows: flight.batch.count,
        rawBytes: flight.batch.rawBytes,
        bytes: stored.bytes,
        selectMs: flight.selectMs,
        gzipMs: flight.times.gzipMs,
        storeMs: flight.times.storeMs,
        waitMs: commitStarted - waitStarted,
        commitMs: performance.now() - commitStarted,
      });
    }
    window.shift();
    notify('space');
    if (failure) return done(signal.aborted ? 'aborted' : 'failed', failure);
    rows += flight.batch.count;
    bytes += stored.bytes;
    batches++;
    if (signal.aborted) return done('aborted');
  }
  if (selectError !== undefined) return done(signal.aborted ? 'aborted' : 'failed', selectFailed(ctx, spec.table, selectError));
  if (signal.aborted) return done('aborted');
  if (selected >= ctx.cap) {
    ctx.logger.warn({ table: spec.table, rows, cap: ctx.cap }, 'archive: table reached the per-cycle cap; the rest waits for the next cycle');
    return done('capped');
  }
  return done('drained');
}

/**
 * Body pieces the compressor has consumed, for the next rows to fill: a table run allocates a
 * few instead of one per 256 KiB of rows (fresh multi-megabyte allocations per batch made V8
 * run a full collection every ~100 ms).
 */
class PiecePool {
  private readonly free: Buffer[] = [];
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafe(BODY_PIECE_BYTES);
  }
  give(piece: Buffer): void {
    if (this.free.length < PIECE_POOL_MAX) this.free.push(Buffer.from(piece.buffer, piece.byteOffset, BODY_PIECE_BYTES));
  }
}
const PIECE_POOL_MAX = 16;
/** Body bytes a batch's compressor may have waiting before its COPY is paused. */
const COMPRESSOR_QUEUE_BYTES = 4 * BODY_PIECE_BYTES;

/** A gzip stream fed piece by piece during the select; `finish` ends it and yields the object's bytes. */
function compress(level: number, pool: PiecePool): BodySink & { finish(): Promise<Buffer>; discard(): void } {
  // zlib passes stream options to its Transform (the typings only list zlib's own).
  const gz = createGzip({ level, chunkSize: GZIP_CHUNK, writableHighWaterMark: COMPRESSOR_QUEUE_BYTES } as ZlibOptions);
  const out: Buffer[] = [];
  gz.on('data', (chunk: Buffer) => out.push(chunk));
  // Until finish() is awaited, an error is kept for it (never an unhandled event).
  const ended = once(gz, 'end').then(() => Buffer.concat(out));
  ended.catch(() => {});
  return {
    // The write callback runs once zlib has consumed the piece: then it may be filled again.
    write: (piece) => gz.write(piece, (error) => error || pool.give(piece)),
    whenDrained: (resume) => void gz.once('drain', resume),
    piece: () => pool.take(),
    finish: () => (gz.end(), ended),
    discard: () => void gz.destroy(),
  };
}

/** Finish compressing and write one batch (starts at once; the promise never rejects). */
function store(ctx: EngineContext, table: string, batch: SelectedBatch, compressed: Promise<Buffer>, selectMs: number, signal: AbortSignal): InFlight {
  const archiveId = ctx.newId();
  const key = archiveKey({ prefix: ctx.options.prefix, service: ctx.options.service, table, oldestRow: batch.minTs, archiveId });
  const started = performance.now();
  const times = { gzipMs: 0, storeMs: 0 };
  const stored = (async (): Promise<BlobCreateResult | Failure> => {
    try {
      // What is left of the compression once the last row has arrived.
      const body = await compressed;
      times.gzipMs = performance.now() - started;
      // Nothing is deleted unless this returns: the object is written and its digest verified.
      const created = await ctx.options.store.storeBlobCreate(key, body, { signal });
      times.storeMs = performance.now() - started - times.gzipMs;
      return created;
    } catch (error) {
      if (error instanceof ForeignObjectError) ctx.metrics.foreignObjects.inc({ table });
      const storeDown = error instanceof StoreError && !(error instanceof ForeignObjectError);
      return failed(ctx, { table, archiveId, key, rows: batch.count, started }, 'store_failed', error, storeDown);
    }
  })();
  return { batch, archiveId, key, started, selectMs, times, stored };
}

/** The ledger row and the exact delete (one gate call) and the hook, in one transaction; returns a failure or nothing. */
async function commit(ctx: EngineContext, sql: Sql, plan: TablePlan, hot: number, flight: InFlight, stored: BlobCreateResult): Promise<Failure | undefined> {
  const { batch, archiveId, key, started } = flight;
  const table = plan.spec.table;
  const entry: LedgerEntry = {
    archiveId,
    table,
    key,
    sha256: stored.sha256,
    bytes: stored.bytes,
    rowCount: batch.count,
    minKey: batch.minKey,
    maxKey: batch.maxKey,
    minTs: batch.minTs,
    maxTs: batch.maxTs,
  };
  const log = { table, archiveId, key, rows: batch.count, started };
  try {
    await ctx.options.afterStore?.({ table, archiveId, key });
    await sql.begin(async (tx) => {
      const { deleted, exact } = await pruneArchived(tx, entry, hot, batch);
      if (deleted !== batch.count || exact !== batch.count) throw new BatchCountMismatchError({ table, archiveId, key, archived: batch.count, deleted: exact });
      await ctx.options.onBatchArchived?.(tx, entry);
    });
  } catch (error) {
    return failed(ctx, log, error instanceof BatchCountMismatchError ? 'rolled_back' : 'failed', error);
  }
  ctx.metrics.rows.inc({ table }, batch.count);
  ctx.metrics.bytes.inc({ table }, stored.bytes);
  ctx.metrics.batches.inc({ table, outcome: 'archived' });
  ctx.logger.info(
    { table, archiveId, key, rows: batch.count, outcome: 'archived', bytes: stored.bytes, sha256: stored.sha256, store: stored.outcome, ms: Math.round(performance.now() - started) },
    'archive batch',
  );
  return undefined;
}

function failed(ctx: EngineContext, log: { table: string; archiveId: string; key: string; rows: number; started: number }, outcome: BatchOutcome, error: unknown, storeDown = false): Failure {
  const { started, ...fields } = log;
  ctx.metrics.batches.inc({ table: log.table, outcome });
  ctx.logger.warn({ ...fields, outcome, err: error, ms: Math.round(performance.now() - started) }, 'archive batch');
  return { error: { ...errorSummary(error), key: log.key }, storeDown };
}

function selectFailed(ctx: EngineContext, table: string, error: unknown): Failure {
  ctx.metrics.batches.inc({ table, outcome: 'failed' });
  ctx.logger.error({ table, err: error }, 'archive: batch select failed');
  return { error: errorSummary(error), storeDown: false };
}

function errorSummary(error: unknown): { code: string; message: string } {
  if (error instanceof RetentionError || error instanceof StoreError) return { code: error.code, message: error.message };
  const code = (error as { code?: unknown } | undefined)?.code;
  return { code: typeof code === 'string' ? code : 'error', message: error instanceof Error ? error.message : String(error) };
}
