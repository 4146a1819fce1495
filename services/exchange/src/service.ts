import type { Sql } from '@craig/db';
import { OutboxWorker, redriveParked, replayEvents, type RetentionWindows, type Subscription, type Transport } from '@craig/mq';
import { ArchiveRunner, createArchiveEngine, type ArchiveEngine } from '@craig/retention';
import { createHttpApp, registerEventAdminRoutes, silentLogger } from '@craig/service';
import type { ObjectStore } from '@craig/store';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { EXCHANGE_ARCHIVE_SPECS } from './archive-specs.ts';
import { startCasesConsumer } from './consumers.ts';
import { registerRoutes } from './routes.ts';
import { SendJobSweeper } from './send-job-sweep.ts';
import { ExchangeWorker } from './worker.ts';

export interface ExchangeArchiveDeps {
  /** `createObjectStore(settings.archive.objectStore, …)`. */
  readonly store: ObjectStore;
  /** Settings ARCHIVE_HOT_WINDOW_DAYS (≥ 365 for exchange), ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES. */
  readonly hotWindowDays: number;
  readonly prefix: string;
  readonly everyMinutes: number;
  /** Wait before the first timed cycle (tests); default 5 s. */
  readonly initialDelayMs?: number;
}

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

export interface ExchangeDeps {
  /** A pool on the exchange database. */
  readonly sql: Sql;
  /** The same database's URL: the sweeps and the archive cycle open dedicated sessions on it. */
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  /** Where `case.opened` comes from (`createTransport(settings.transport, …)`). */
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS). */
  readonly retention: RetentionWindows;
  /** Settings OUTBOX_MAX_ATTEMPTS and INBOX_MAX_RETRIES. */
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly. */
  readonly pruneEveryTicks?: number;
  readonly inboxMaxRetries: number;
  readonly archive: ExchangeArchiveDeps;
  readonly sendJobs: ExchangeSendJobDeps;
  readonly logger?: Logger;
  /** Consumer tuning (tests); defaults suit production. */
  readonly consumers?: { readonly prefetch?: number; readonly retryDelayMs?: (attempt: number) => number };
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
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service: 'exchange',
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    // Room for the redrive route's largest body (10,000 ids).
    bodyLimitBytes: 256 * 1024,
    readiness: [
      {
        name: 'database',
        check: async () => {
          await deps.sql`select 1`;
        },
      },
    ],
  });
  // Ledger-only (seed 003): no onBatchArchived hook, so archiving stages no outbox event.
  const engine = createArchiveEngine({
    service: 'exchange',
    databaseUrl: deps.databaseUrl,
    store: deps.archive.store,
    specs: EXCHANGE_ARCHIVE_SPECS,
    hotWindowDays: deps.archive.hotWindowDays,
    prefix: deps.archive.prefix,
    registry: deps.registry,
    logger,
  });
  const archive = new ArchiveRunner({
    engine,
    everyMinutes: deps.archive.everyMinutes,
    registry: deps.registry,
    logger,
    ...(deps.archive.initialDelayMs === undefined ? {} : { initialDelayMs: deps.archive.initialDelayMs }),
  });
  registerRoutes(app, { sql: deps.sql, archive });
  registerEventAdminRoutes(app, {
    replay: (range) => replayEvents(deps.sql, range, deps.retention),
    redrive: (request) =>
      redriveParked(deps.sql, deps.retention, {
        ...(request.ids ? { ids: request.ids } : {}),
        ...(request.limit ? { limit: request.limit } : {}),
      }),
  });
  const outbox = new OutboxWorker({
    service: 'exchange',
    sql: deps.sql,
    databaseUrl: deps.databaseUrl,
    transport: deps.transport,
    retention: deps.retention,
    maxAttempts: deps.outboxMaxAttempts,
    ...(deps.pruneEveryTicks === undefined ? {} : { pruneEveryTicks: deps.pruneEveryTicks }),
    registry: deps.registry,
    logger,
  });
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
    startConsumers: () =>
      startCasesConsumer({
        transport: deps.transport,
        sql: deps.sql,
        maxRetries: deps.inboxMaxRetries,
        registry: deps.registry,
        logger,
        ...(deps.consumers?.prefetch === undefined ? {} : { prefetch: deps.consumers.prefetch }),
        ...(deps.consumers?.retryDelayMs ? { retryDelayMs: deps.consumers.retryDelayMs } : {}),
      }),
  };
}
