import type { OutboxWorker, Subscription } from '@craig/mq';
import { consumerOptions, serviceCore, type ConsumerDeps, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
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

export interface FinancialDeps extends ServiceCoreDeps, ConsumerDeps {
  readonly sweep: FinancialSweepDeps;
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
  const { app, outbox, logger } = serviceCore('financial', deps);
  const sweep = new SweepRunner({
    databaseUrl: deps.databaseUrl,
    service: 'financial',
    retentionDays: deps.sweep.retentionDays,
    registry: deps.registry,
    logger,
    ...(deps.sweep.batchSize === undefined ? {} : { batchSize: deps.sweep.batchSize }),
    ...(deps.sweep.cap === undefined ? {} : { cap: deps.sweep.cap }),
    // The transport sweep's cadence (EVENT_PRUNE_EVERY_TICKS), unless a test sets its own timer.
    ...(deps.pruneEveryTicks === undefined ? {} : { everyTicks: deps.pruneEveryTicks }),
    ...(deps.sweep.everyMs === undefined ? {} : { everyMs: deps.sweep.everyMs }),
    ...(deps.sweep.initialDelayMs === undefined ? {} : { initialDelayMs: deps.sweep.initialDelayMs }),
  });
  registerRoutes(app, { sql: deps.sql, sweep });
  return {
    app,
    outbox,
    sweep,
    startConsumers: () => startPlacementConsumer(consumerOptions('financial', deps, logger)),
  };
}
