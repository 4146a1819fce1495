// The archive every archiving service composes: engine + timer runner from its deps, and at
// boot the object store those deps carry, opened from ARCHIVE_* settings and closed on stop.
import type { TransactionSql } from '@craig/db';
import { createObjectStore, type ObjectStore, type ObjectStoreConfig } from '@craig/store';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createArchiveEngine, type ArchiveEngine, type ArchivedBatch } from './engine.ts';
import { ArchiveRunner } from './runner.ts';
import type { ArchiveSpec } from './spec.ts';

/** A service's archive dependencies: the object store and settings ARCHIVE_HOT_WINDOW_DAYS, ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES, ARCHIVE_FIRST_CYCLE_DELAY_SECONDS. */
export interface ArchiveDeps {
  /** `createObjectStore(settings.archive.objectStore, …)` ({@link openArchiveDeps} at boot). */
  readonly store: ObjectStore;
  readonly hotWindowDays: number;
  readonly prefix: string;
  readonly everyMinutes: number;
  /** ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: the first timed cycle between this and twice this after start (default 300). */
  readonly firstCycleDelaySeconds?: number;
  /** Wait exactly this long before the first timed cycle instead (tests). */
  readonly initialDelayMs?: number;
}

export interface ServiceArchiveOptions {
  readonly service: string;
  readonly databaseUrl: string;
  /** In FK deletion order. */
  readonly specs: readonly ArchiveSpec[];
  readonly archive: ArchiveDeps;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Stage the batch's announcement (see `ArchiveEngineOptions.onBatchArchived`); none for a ledger-only service. */
  readonly onBatchArchived?: (tx: TransactionSql, batch: ArchivedBatch) => Promise<void>;
}

/** The engine over the service's specs and its timer runner (`run(signal)`, `runNow()`); `engine.check()` it at boot. */
export function createServiceArchive(options: ServiceArchiveOptions): { readonly engine: ArchiveEngine; readonly runner: ArchiveRunner } {
  const engine = createArchiveEngine({
    service: options.service,
    databaseUrl: options.databaseUrl,
    store: options.archive.store,
    specs: options.specs,
    hotWindowDays: options.archive.hotWindowDays,
    prefix: options.archive.prefix,
    registry: options.registry,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.onBatchArchived ? { onBatchArchived: options.onBatchArchived } : {}),
  });
  const runner = new ArchiveRunner({
    engine,
    everyMinutes: options.archive.everyMinutes,
    registry: options.registry,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.archive.firstCycleDelaySeconds === undefined ? {} : { firstCycleDelaySeconds: options.archive.firstCycleDelaySeconds }),
    ...(options.archive.initialDelayMs === undefined ? {} : { initialDelayMs: options.archive.initialDelayMs }),
  });
  return { engine, runner };
}

/** Settings ARCHIVE_* as `loadServiceSettings` gives them (`settings.archive`). */
export interface ArchiveSettingsInput {
  readonly objectStore: ObjectStoreConfig;
  readonly hotWindowDays: number;
  readonly prefix: string;
  readonly everyMinutes: number;
  readonly firstCycleDelaySeconds: number;
}

/**
 * At boot (`runService`'s `build`): open the object store from `settings.archive` and register
 * its stop on the boot context (after the outbox worker, before the transport). The stop aborts
 * an upload in flight instead of holding shutdown for its retry budget.
 */
export function openArchiveDeps(settings: ArchiveSettingsInput, context: { readonly logger: Logger; onStop(name: string, stop: () => Promise<void>): void }): ArchiveDeps {
  const abort = new AbortController();
  const store = createObjectStore(settings.objectStore, { logger: context.logger, signal: abort.signal });
  context.onStop('object store', async () => {
    abort.abort();
    store.close();
  });
  return { store, hotWindowDays: settings.hotWindowDays, prefix: settings.prefix, everyMinutes: settings.everyMinutes, firstCycleDelaySeconds: settings.firstCycleDelaySeconds };
}
