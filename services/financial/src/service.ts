import type { Sql } from '@craig/db';
import { OutboxWorker, redriveParked, replayEvents, type RetentionWindows, type Subscription, type Transport } from '@craig/mq';
import { createHttpApp, registerEventAdminRoutes, silentLogger } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { startPlacementConsumer } from './consumers.ts';
import { registerRoutes } from './routes.ts';
import { SweepRunner } from './sweep-runner.ts';

export interface FinancialSweepDeps {
  /** Settings RECONCILE_SETTLED_RETENTION_DAYS (0 disables). */
  readonly retentionDays: number;
  /** Rows per statement and per cycle (tests); default 5,000 and 1,000,000. */
  readonly batchSize?: number;
  readonly cap?: number;
  /** Timer (tests); default hourly after a per-service phase. */
  readonly everyMs?: number;
  readonly initialDelayMs?: number;
}

export interface FinancialDeps {
  /** A pool on the financial database. */
  readonly sql: Sql;
  /** The same database's URL: the transport prune and the reconcile sweep open dedicated sessions on it. */
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS). */
  readonly retention: RetentionWindows;
  readonly sweep: FinancialSweepDeps;
  /** Settings OUTBOX_MAX_ATTEMPTS and INBOX_MAX_RETRIES. */
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly. */
  readonly pruneEveryTicks?: number;
  readonly inboxMaxRetries: number;
  readonly logger?: Logger;
  /** Consumer tuning (tests). */
  readonly consumers?: { readonly prefetch?: number; readonly retryDelayMs?: (attempt: number) => number };
}

export interface FinancialService {
  readonly app: FastifyInstance;
  /** Publishes `subsidy.settled` and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** The settled reconcile sweep's timer loop (`run(signal)`) and on-demand cycle. */
  readonly sweep: SweepRunner;
  /** Subscribe `financial.placements`; close it on shutdown. */
  startConsumers(): Promise<Subscription>;
}

/** The financial service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: FinancialDeps): FinancialService {
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service: 'financial',
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    readiness: [
      {
        name: 'database',
        check: async () => {
          await deps.sql`select 1`;
        },
      },
    ],
  });
  const sweep = new SweepRunner({
    databaseUrl: deps.databaseUrl,
    service: 'financial',
    retentionDays: deps.sweep.retentionDays,
    registry: deps.registry,
    logger,
    ...(deps.sweep.batchSize === undefined ? {} : { batchSize: deps.sweep.batchSize }),
    ...(deps.sweep.cap === undefined ? {} : { cap: deps.sweep.cap }),
    ...(deps.sweep.everyMs === undefined ? {} : { everyMs: deps.sweep.everyMs }),
    ...(deps.sweep.initialDelayMs === undefined ? {} : { initialDelayMs: deps.sweep.initialDelayMs }),
  });
  registerRoutes(app, { sql: deps.sql, sweep });
  registerEventAdminRoutes(app, {
    replay: (range) => replayEvents(deps.sql, range, deps.retention),
    redrive: (request) =>
      redriveParked(deps.sql, deps.retention, {
        ...(request.ids ? { ids: request.ids } : {}),
        ...(request.limit ? { limit: request.limit } : {}),
      }),
  });
  const outbox = new OutboxWorker({
    service: 'financial',
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
    sweep,
    startConsumers: () =>
      startPlacementConsumer({
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
