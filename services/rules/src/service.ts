import type { Sql } from '@craig/db';
import { OutboxWorker, redriveParked, replayEvents, type RetentionWindows, type Subscription, type Transport } from '@craig/mq';
import { ArchiveRunner, createArchiveEngine, type ArchiveEngine } from '@craig/retention';
import { createHttpApp, registerEventAdminRoutes, silentLogger } from '@craig/service';
import type { ObjectStore } from '@craig/store';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { announceArchivedBatch, RULES_ARCHIVE_SPECS } from './archive-specs.ts';
import { startEvaluateConsumer } from './consumers.ts';
import { registerRoutes } from './routes.ts';

export interface RulesArchiveDeps {
  /** `createObjectStore(settings.archive.objectStore, …)`. */
  readonly store: ObjectStore;
  /** Settings ARCHIVE_HOT_WINDOW_DAYS, ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES. */
  readonly hotWindowDays: number;
  readonly prefix: string;
  readonly everyMinutes: number;
  /** Wait before the first timed cycle (tests); default 5 s. */
  readonly initialDelayMs?: number;
}

export interface RulesDeps {
  /** A pool on the rules database. */
  readonly sql: Sql;
  /** The same database's URL: the outbox prune and the archive cycle open dedicated sessions on it. */
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  /** Where events come from and the outbox publishes to (`createTransport(settings.transport, …)`). */
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS). */
  readonly retention: RetentionWindows;
  /** Settings OUTBOX_MAX_ATTEMPTS and INBOX_MAX_RETRIES. */
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly. */
  readonly pruneEveryTicks?: number;
  readonly inboxMaxRetries: number;
  readonly archive: RulesArchiveDeps;
  readonly logger?: Logger;
  /** Consumer tuning (tests); defaults suit production. */
  readonly consumers?: { readonly prefetch?: number; readonly retryDelayMs?: (attempt: number) => number };
}

export interface RulesService {
  readonly app: FastifyInstance;
  /** Publishes the outbox (`rule.evaluated`, archive announcements) and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** The archive engine over `rule_evaluations`; `check()` it at boot. */
  readonly engine: ArchiveEngine;
  /** The archive timer loop (`run(signal)`) and the on-demand cycle. */
  readonly archive: ArchiveRunner;
  /** Subscribe the evaluate consumer (`case.*`, `placement.*`, `safety.*`); close it on shutdown. */
  startConsumers(): Promise<Subscription>;
}

/** The rules service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: RulesDeps): RulesService {
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service: 'rules',
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    // Room for the largest rule set (256 KiB as compact JSON, more pretty-printed) and the
    // redrive route's largest body (10,000 ids).
    bodyLimitBytes: 512 * 1024,
    readiness: [
      {
        name: 'database',
        check: async () => {
          await deps.sql`select 1`;
        },
      },
    ],
  });
  const engine = createArchiveEngine({
    service: 'rules',
    databaseUrl: deps.databaseUrl,
    store: deps.archive.store,
    specs: RULES_ARCHIVE_SPECS,
    hotWindowDays: deps.archive.hotWindowDays,
    prefix: deps.archive.prefix,
    registry: deps.registry,
    logger,
    onBatchArchived: announceArchivedBatch,
  });
  const archive = new ArchiveRunner({
    engine,
    everyMinutes: deps.archive.everyMinutes,
    registry: deps.registry,
    logger,
    ...(deps.archive.initialDelayMs === undefined ? {} : { initialDelayMs: deps.archive.initialDelayMs }),
  });
  registerRoutes(app, { sql: deps.sql, archive, adminToken: deps.adminToken });
  registerEventAdminRoutes(app, {
    replay: (range) => replayEvents(deps.sql, range, deps.retention),
    redrive: (request) =>
      redriveParked(deps.sql, deps.retention, {
        ...(request.ids ? { ids: request.ids } : {}),
        ...(request.limit ? { limit: request.limit } : {}),
      }),
  });
  const outbox = new OutboxWorker({
    service: 'rules',
    sql: deps.sql,
    databaseUrl: deps.databaseUrl,
    transport: deps.transport,
    retention: deps.retention,
    maxAttempts: deps.outboxMaxAttempts,
    ...(deps.pruneEveryTicks === undefined ? {} : { pruneEveryTicks: deps.pruneEveryTicks }),
    registry: deps.registry,
    logger,
  });
  return {
    app,
    outbox,
    engine,
    archive,
    startConsumers: () =>
      startEvaluateConsumer({
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
