import { createCleanupRunner, RUNTIME_ROLE, type CleanupRunner } from '@craig/cleanup';
import type { Sql } from '@craig/db';
import { OutboxWorker, redriveParked, replayEvents, type RetentionWindows, type Transport } from '@craig/mq';
import { createHttpApp, registerEventAdminRoutes, silentLogger } from '@craig/service';
import type { CleanupSettings } from '@craig/settings';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { InventoryStore } from './inventory-store.ts';
import { registerRoutes } from './routes.ts';

export interface InventoryDeps {
  /** A pool running as the runtime role (`createClient(url, { role: RUNTIME_ROLE })`). */
  readonly sql: Sql;
  /** The database URL: the cleanup runner opens its own dedicated sessions on it. */
  readonly databaseUrl: string;
  /** The role the runner's sessions run as; default the runtime role. */
  readonly role?: string;
  readonly registry: Registry;
  readonly adminToken: string;
  readonly cleanup: Pick<CleanupSettings, 'collectDeadlineMinutes' | 'jobRetentionDays'>;
  /** Where the outbox publishes (`createTransport(settings.transport, …)`). */
  readonly transport: Transport;
  /** Transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS) and OUTBOX_MAX_ATTEMPTS. */
  readonly retention: RetentionWindows;
  readonly outboxMaxAttempts: number;
  /** EVENT_PRUNE_EVERY_TICKS: outbox-worker ticks between transport prune cycles; default hourly (3600). */
  readonly pruneEveryTicks?: number;
  readonly logger?: Logger;
  /** Runner tuning (tests and benchmarks); defaults suit production. */
  readonly runner?: { readonly idleMs?: number; readonly stepPauseMs?: number; readonly historyEveryMs?: number };
}

export interface InventoryService {
  readonly app: FastifyInstance;
  /** Steps cleanup jobs to completion; `start()` it after the app is ready. */
  readonly runner: CleanupRunner;
  /** Publishes the outbox and runs the transport sweep; `run(signal)` it after the app is ready. */
  readonly outbox: OutboxWorker;
}

/** The inventory service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: InventoryDeps): InventoryService {
  const logger = deps.logger ?? silentLogger();
  const app = createHttpApp({
    service: 'inventory',
    logger,
    registry: deps.registry,
    adminToken: deps.adminToken,
    bodyLimitBytes: 256 * 1024,
    readiness: [
      {
        // Ready only as the non-owner runtime role: an owner could switch the admission guards off.
        name: 'database',
        check: async () => {
          const [row] = await deps.sql<{ role: string }[]>`select current_user as role`;
          const expected = deps.role ?? RUNTIME_ROLE;
          if (row?.role !== expected) throw new Error(`connected as ${row?.role ?? 'nobody'}, not the runtime role ${expected}`);
        },
      },
    ],
  });
  registerRoutes(app, new InventoryStore(deps.sql), { collectDeadlineMinutes: deps.cleanup.collectDeadlineMinutes });
  registerEventAdminRoutes(app, {
    replay: (range) => replayEvents(deps.sql, range, deps.retention),
    redrive: (request) =>
      redriveParked(deps.sql, deps.retention, {
        ...(request.ids ? { ids: request.ids } : {}),
        ...(request.limit ? { limit: request.limit } : {}),
      }),
  });
  const outbox = new OutboxWorker({
    service: 'inventory',
    sql: deps.sql,
    databaseUrl: deps.databaseUrl,
    transport: deps.transport,
    retention: deps.retention,
    maxAttempts: deps.outboxMaxAttempts,
    ...(deps.pruneEveryTicks === undefined ? {} : { pruneEveryTicks: deps.pruneEveryTicks }),
    registry: deps.registry,
    logger,
  });
  const runner = createCleanupRunner({
    url: deps.databaseUrl,
    sql: deps.sql,
    service: 'inventory',
    role: deps.role ?? RUNTIME_ROLE,
    historyRetentionDays: deps.cleanup.jobRetentionDays,
    logger,
    registry: deps.registry,
    ...(deps.runner?.idleMs === undefined ? {} : { idleMs: deps.runner.idleMs }),
    ...(deps.runner?.stepPauseMs === undefined ? {} : { stepPauseMs: deps.runner.stepPauseMs }),
    ...(deps.runner?.historyEveryMs === undefined ? {} : { historyEveryMs: deps.runner.historyEveryMs }),
  });
  return { app, runner, outbox };
}
