import type { OutboxWorker, Subscription } from '@craig/mq';
import { createServiceArchive, type ArchiveDeps, type ArchiveEngine, type ArchiveRunner } from '@craig/retention';
import { consumerOptions, serviceCore, type ConsumerDeps, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { EXCHANGE_ARCHIVE_SPECS } from './archive-specs.ts';
import { startCasesConsumer } from './consumers.ts';
import { registerRoutes } from './routes.ts';
import { SendJobSweeper } from './send-job-sweep.ts';
import { ExchangeWorker } from './worker.ts';

/** The object store and settings ARCHIVE_HOT_WINDOW_DAYS (≥ 365 for exchange), ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES. */
export type ExchangeArchiveDeps = ArchiveDeps;

export interface ExchangeSendJobDeps {
  /** Settings SEND_JOB_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
  /** Sweep cadence (tests); default hourly with a deterministic phase. */
  readonly everyMs?: number;
  readonly initialDelayMs?: number;
  /** Sweep bounds (tests); defaults 5,000 per batch and 1,000,000 per cycle. */
  readonly batchSize?: number;
  readonly cap?: number;
}

export interface ExchangeDeps extends ServiceCoreDeps, ConsumerDeps {
  readonly archive: ExchangeArchiveDeps;
  readonly sendJobs: ExchangeSendJobDeps;
  /** Worker tuning (tests); defaults suit production. */
  readonly worker?: { readonly intervalMs?: number; readonly maxAttempts?: number; readonly batchSize?: number };
}

export interface ExchangeService {
  readonly app: FastifyInstance;
  /** Runs the transport sweep (exchange stages no events of its own); `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** Moves send jobs and screenings on; `run(signal)` it, or `step()` in tests. */
  readonly worker: ExchangeWorker;
  /** The terminal-state sweep of `exchange_send_jobs`; `run(signal)` it, or `runOnce()`. */
  readonly sendJobSweep: SendJobSweeper;
  /** The archive engine over the three SSA tables in FK order; `check()` it at boot. */
  readonly engine: ArchiveEngine;
  /** The archive timer loop (`run(signal)`) and the on-demand cycle. */
  readonly archive: ArchiveRunner;
  /** Subscribe `exchange.cases` to `case.opened`; close it on shutdown. */
  startConsumers(): Promise<Subscription>;
}

/** The exchange service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: ExchangeDeps): ExchangeService {
  const { app, outbox, logger } = serviceCore('exchange', deps);
  // Ledger-only (seed 003): no onBatchArchived hook, so archiving stages no outbox event.
  const { engine, runner: archive } = createServiceArchive({
    service: 'exchange',
    databaseUrl: deps.databaseUrl,
    specs: EXCHANGE_ARCHIVE_SPECS,
    archive: deps.archive,
    registry: deps.registry,
    logger,
  });
  registerRoutes(app, { sql: deps.sql, archive });
  const worker = new ExchangeWorker({
    sql: deps.sql,
    registry: deps.registry,
    logger,
    ...(deps.worker?.intervalMs === undefined ? {} : { intervalMs: deps.worker.intervalMs }),
    ...(deps.worker?.maxAttempts === undefined ? {} : { maxAttempts: deps.worker.maxAttempts }),
    ...(deps.worker?.batchSize === undefined ? {} : { batchSize: deps.worker.batchSize }),
  });
  const sendJobSweep = new SendJobSweeper({
    databaseUrl: deps.databaseUrl,
    retentionDays: deps.sendJobs.retentionDays,
    registry: deps.registry,
    logger,
    // The transport sweep's cadence (EVENT_PRUNE_EVERY_TICKS), unless a test sets its own timer.
    ...(deps.pruneEveryTicks === undefined ? {} : { everyTicks: deps.pruneEveryTicks }),
    ...(deps.sendJobs.everyMs === undefined ? {} : { everyMs: deps.sendJobs.everyMs }),
    ...(deps.sendJobs.initialDelayMs === undefined ? {} : { initialDelayMs: deps.sendJobs.initialDelayMs }),
    ...(deps.sendJobs.batchSize === undefined ? {} : { batchSize: deps.sendJobs.batchSize }),
    ...(deps.sendJobs.cap === undefined ? {} : { cap: deps.sendJobs.cap }),
  });
  return {
    app,
    outbox,
    worker,
    sendJobSweep,
    engine,
    archive,
    startConsumers: () => startCasesConsumer(consumerOptions('exchange', deps, logger)),
  };
}
