import type { Sql } from '@craig/db';
import { OutboxWorker, type RetentionWindows, type Transport } from '@craig/mq';
import { createHttpApp, outboxAdminHandlers, registerEventAdminRoutes, silentLogger, type ConsumerSpec } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { casesConsumer } from './consumer.ts';
import { registerRoutes } from './routes.ts';

export interface PlacementsDeps {
  readonly sql: Sql;
  /** The database URL: each transport-sweep cycle opens a dedicated session on it. */
  readonly databaseUrl: string;
  readonly registry: Registry;
  readonly adminToken: string;
  /** Where the outbox publishes (`createTransport(settings.transport, …)`). */
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS). */
  readonly retention: RetentionWindows;
  /** OUTBOX_MAX_ATTEMPTS. */
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly (3600). */
  readonly pruneEveryTicks?: number;
  readonly logger?: Logger;
  /** Outbox loop tuning (tests); defaults suit production. */
  readonly outbox?: { readonly pollIntervalMs?: number };
  /** The `case.*` consumer's durable name; default `placements.cases` (tests make it unique). */
  readonly casesConsumerName?: string;
}

export interface PlacementsService {
  readonly app: FastifyInstance;
  /** Publishes `placement.started` / `placement.ended` and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** The `case.*` inbox consumer; the boot helper (or a test) subscribes it. */
  readonly consumers: readonly ConsumerSpec[];
}

/** The placements service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: PlacementsDeps): PlacementsService {
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service: 'placements',
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    bodyLimitBytes: 16 * 1024,
    readiness: [{ name: 'database', check: async () => void (await deps.sql`select 1`) }],
  });
  registerRoutes(app, deps.sql);
  registerEventAdminRoutes(app, outboxAdminHandlers(deps.sql, deps.retention));
  const outbox = new OutboxWorker({
    service: 'placements',
    sql: deps.sql,
    databaseUrl: deps.databaseUrl,
    transport: deps.transport,
    retention: deps.retention,
    maxAttempts: deps.outboxMaxAttempts,
    registry: deps.registry,
    logger,
    ...(deps.outbox?.pollIntervalMs === undefined ? {} : { pollIntervalMs: deps.outbox.pollIntervalMs }),
    ...(deps.pruneEveryTicks === undefined ? {} : { pruneEveryTicks: deps.pruneEveryTicks }),
  });
  return { app, outbox, consumers: [casesConsumer(deps.casesConsumerName)] };
}
