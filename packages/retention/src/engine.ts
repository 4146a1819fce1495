import { LOCK_KEYS, sessionParameters, uuidv7, withDedicatedSession, type TransactionSql } from '@craig/db';
import { retentionOverrun } from '@craig/mq';
import type { ObjectStore } from '@craig/store';
import pino, { type Logger } from 'pino';
import postgres from 'postgres';
import { Registry } from 'prom-client';
import { archiveKey } from './archive-key.ts';
import { ArchiveSpecError, PurgeRefusedError, type PurgeRequest } from './errors.ts';
import { CANONICAL_OUTPUT, type LedgerEntry } from './internal/batch-sql.ts';
import { planTable, type TablePlan } from './internal/catalog.ts';
import { archiveMetrics } from './internal/metrics.ts';
import { archiveRetentionSpecs } from './overrun.ts';
import { archiveTable, type EngineContext } from './internal/table-run.ts';
import { checkSpecOrder, type ArchiveSpec } from './spec.ts';

/** Most rows one table may lose in one cycle: a jumped clock stops here instead of draining everything. */
export const ARCHIVE_CYCLE_CAP = 1_000_000;

/**
 * Uncompressed bytes an archive object aims at (ADR-059 §16): each batch after a table's first
 * is sized from the bytes per row of the one before, so objects are few and large but bounded
 * (and so is the engine's memory: a few batches in flight), whatever the row width.
 */
export const DEFAULT_ARCHIVE_OBJECT_BYTES = 8 * 1024 * 1024;

/**
 * gzip level of archive objects. Measured on audit rows: level 1 compresses NDJSON 5.1×, level 6
 * 5.5×, at three times the CPU; the archiver shares its cores with the service.
 */
export const DEFAULT_GZIP_LEVEL = 1;

/** What the engine tells the outbox hook about a batch it is committing. */
export type ArchivedBatch = LedgerEntry;

export interface ArchiveEngineOptions {
  /** The service whose database this is; becomes the key's `<service>` segment. */
  readonly service: string;
  readonly databaseUrl: string;
  readonly store: ObjectStore;
  /** In FK deletion order: dependents before the tables they reference. */
  readonly specs: readonly ArchiveSpec[];
  /** The service's hot window (settings `ARCHIVE_HOT_WINDOW_DAYS`); a spec may only lengthen it. */
  readonly hotWindowDays: number;
  /** Settings `ARCHIVE_PREFIX`. */
  readonly prefix: string;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /**
   * Called inside the ledger+delete transaction, after the delete matched: stage the outbox
   * event announcing the batch here (rules and security do; exchange is ledger-only). If it
   * throws, the batch rolls back with it.
   */
  readonly onBatchArchived?: (tx: TransactionSql, batch: ArchivedBatch) => Promise<void>;
  /** Per table per cycle; default {@link ARCHIVE_CYCLE_CAP}. */
  readonly maxRowsPerCycle?: number;
  /** gzip level 1…9; default 1 (JSON lines compress 5.1× at 1 and 5.5× at 6, for a third of the CPU). */
  readonly gzipLevel?: number;
  /** Uncompressed bytes per archive object to aim at; default {@link DEFAULT_ARCHIVE_OBJECT_BYTES}. A spec's `batchSize` still caps the rows. */
  readonly maxObjectBytes?: number;
  /** New archive ids; UUIDv7 by default (tests pin them to provoke key collisions). */
  readonly newArchiveId?: () => string;
  /**
   * Fault injection for tests: runs after the object is stored, before the ledger
   * transaction. A throw here is a crash between put and ledger.
   */
  readonly afterStore?: (batch: { readonly table: string; readonly archiveId: string; readonly key: string }) => Promise<void>;
  /** Where each committed batch's time went (the benchmark's profile); called after its commit. */
  readonly onBatchProfile?: (profile: BatchProfile) => void;
}

/**
 * One committed batch's phases, ms. The phases overlap across batches (the pipeline), so they
 * add up to more than the wall time; `waitMs` is how long the commit waited for this batch's
 * object after the previous commit (time the database side was idle on the store).
 */
export interface BatchProfile {
  readonly table: string;
  readonly rows: number;
  /** Uncompressed NDJSON bytes and the object's bytes. */
  readonly rawBytes: number;
  readonly bytes: number;
  /** The COPY out of PostgreSQL, the rows fed to the compressor as they arrive. */
  readonly selectMs: number;
  /** The rest of the compression after the last row (the object's bytes are then whole). */
  readonly gzipMs: number;
  /** The digest-verified create: precheck, put, (garage) read-back. */
  readonly storeMs: number;
  readonly waitMs: number;
  /** The ledger+delete transaction. */
  readonly commitMs: number;
}

export type TableOutcome = 'drained' | 'capped' | 'failed' | 'aborted' | 'skipped';

export interface TableReport {
  readonly table: string;
  readonly rows: number;
  readonly bytes: number;
  readonly batches: number;
  readonly outcome: TableOutcome;
  readonly error?: { readonly code: string; readonly message: string; readonly key?: string };
}

export interface CycleReport {
  readonly service: string;
  /** `lease_held`: another archiver of this database is running; nothing was done. */
  readonly status: 'completed' | 'lease_held' | 'aborted';
  readonly tables: readonly TableReport[];
  readonly ms: number;
}

/** The archive-then-prune engine of one service. */
export interface ArchiveEngine {
  readonly service: string;
  readonly specs: readonly ArchiveSpec[];
  /** Check every spec against the database (tables, columns, key, FK guards); call at boot. */
  check(): Promise<void>;
  /** One cycle: take the lease or return `lease_held`; archive each spec in order. */
  runCycle(options?: { readonly signal?: AbortSignal }): Promise<CycleReport>;
  /** Always refused with `PurgeRefusedError`: archives are never destroyed (D14). */
  purge(request?: PurgeRequest): Promise<never>;
}

export function createArchiveEngine(options: ArchiveEngineOptions): ArchiveEngine {
  const hot = options.hotWindowDays;
  if (!Number.isInteger(hot) || hot < 1) throw new RangeError(`hotWindowDays must be a whole number ≥ 1: ${hot}`);
  for (const spec of options.specs) {
    if (spec.hotWindowDays !== undefined && spec.hotWindowDays < hot) {
      throw new ArchiveSpecError(spec.table, 'hotWindowDays', spec.hotWindowDays, `would shorten the service's hot window of ${hot} days; a spec may only lengthen it`);
    }
  }
  checkSpecOrder(options.specs);
  // The key layout's segments, checked once here rather than at the first batch.
  for (const spec of options.specs) archiveKey({ prefix: options.prefix, service: options.service, table: spec.table, oldestRow: '', archiveId: 'check' });
  const cap = options.maxRowsPerCycle ?? ARCHIVE_CYCLE_CAP;
  if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`maxRowsPerCycle must be a positive integer: ${cap}`);
  const level = options.gzipLevel ?? DEFAULT_GZIP_LEVEL;
  if (!Number.isInteger(level) || level < 1 || level > 9) throw new RangeError(`gzipLevel must be 1…9: ${level}`);
  const maxObjectBytes = options.maxObjectBytes ?? DEFAULT_ARCHIVE_OBJECT_BYTES;
  if (!Number.isInteger(maxObjectBytes) || maxObjectBytes < 1024) throw new RangeError(`maxObjectBytes must be a whole number ≥ 1024: ${maxObjectBytes}`);

  const ctx: EngineContext = {
    options,
    logger: (options.logger ?? pino({ level: 'silent' })).child({ component: 'archive', service: options.service }),
    metrics: archiveMetrics(options.registry ?? new Registry()),
    cap,
    level,
    maxObjectBytes,
    newId: options.newArchiveId ?? (() => uuidv7()),
  };

  return {
    service: options.service,
    specs: options.specs,
    async check() {
      await withDedicatedSession(options.databaseUrl, async (session) => {
        for (const spec of options.specs) await planTable(session.sql, spec, options.hotWindowDays);
      }, { service: `${options.service}:archive-check` });
    },
    runCycle: (cycle) => runCycle(ctx, cycle?.signal),
    async purge(request = {}) {
      ctx.logger.warn({ request }, 'archive purge refused (D14)');
      throw new PurgeRefusedError(options.service, request);
    },
  };
}

async function runCycle(ctx: EngineContext, signal: AbortSignal | undefined): Promise<CycleReport> {
  const { options } = ctx;
  const started = performance.now();
  const tables: TableReport[] = [];
  const report = (status: CycleReport['status']): CycleReport => ({ service: options.service, status, tables, ms: Math.round(performance.now() - started) });
  try {
    return await withDedicatedSession(
      options.databaseUrl,
      async (session) => {
        if (!(await session.tryAdvisoryLock(LOCK_KEYS.archiveLease))) {
          ctx.logger.info('archive cycle skipped: another archiver holds the lease');
          return report('lease_held');
        }
        // Without an outbox hook a batch commit need not wait for its WAL flush: a commit lost
        // in a server crash takes its ledger row and its delete with it, which leaves the rows
        // hot and the (verified) object an orphan, exactly like a rolled-back batch. With a
        // hook it must: an outbox worker may publish the announcement before a crash erases
        // the commit it announces.
        if (!options.onBatchArchived) await session.sql`select set_config('synchronous_commit', 'off', false)`;
        // Plan every table before touching any: a spec that no longer fits the schema stops
        // the cycle loudly instead of archiving half the chain.
        const plans: TablePlan[] = [];
        for (const spec of options.specs) plans.push(await planTable(session.sql, spec, options.hotWindowDays));
        // Batches are read on a second connection so selects overlap the commits on the
        // session; it is closed with the cycle. Its settings make every value's text canonical.
        const read = postgres(options.databaseUrl, {
          max: 1,
          idle_timeout: 0,
          max_lifetime: null,
          onnotice: () => {},
          connection: { ...sessionParameters({ service: `${options.service}:archive-read` }), ...CANONICAL_OUTPUT },
        });
        try {
          let stop = false;
          for (const plan of plans) {
            if (stop || session.signal.aborted) {
              tables.push({ table: plan.spec.table, rows: 0, bytes: 0, batches: 0, outcome: session.signal.aborted ? 'aborted' : 'skipped' });
              continue;
            }
            const table = await archiveTable(ctx, { read, write: session.sql }, plan, session.signal);
            tables.push(table.report);
            // The store is unreachable or out of time: the next table would only wait for it too.
            if (table.storeDown) stop = true;
          }
        } finally {
          await read.end({ timeout: 5 });
        }
        // A drained table has nothing overdue and is not counted (ADR-081): its last select found
        // no eligible row after its keys, and every row selected before was deleted. Counting
        // would be the first read of every tuple the cycle just deleted (~8 % of a 500 k-row
        // cycle). A table that guards itself is counted: its later batches free rows behind the keyset.
        const uncounted = new Set(
          options.specs
            .filter((spec) => !spec.guards.some((g) => g.table === spec.table) && tables.some((t) => t.table === spec.table && t.outcome === 'drained'))
            .map((spec) => spec.table),
        );
        // What is still overdue after the cycle (the invariant's count, on the engine's own
        // predicate): the "archive overrun" alert reads it. Not after an aborted cycle.
        const overdue: Record<string, number> = {};
        if (!session.signal.aborted) {
          for (const spec of archiveRetentionSpecs(options.specs, options.hotWindowDays)) {
            const n = uncounted.has(spec.table) ? 0 : (await retentionOverrun(session.sql, spec)).overdueRows;
            overdue[spec.table] = n;
            ctx.metrics.overdueRows.set({ table: spec.table }, n);
          }
        }
        ctx.logger.info({ tables, overdue, ms: Math.round(performance.now() - started) }, 'archive cycle done');
        return report(session.signal.aborted ? 'aborted' : 'completed');
      },
      { service: `${options.service}:archive`, ...(signal ? { signal } : {}) },
    );
  } catch (error) {
    if (signal?.aborted) return report('aborted');
    throw error;
  }
}

