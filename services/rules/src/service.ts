import type { OutboxWorker, Subscription } from '@craig/mq';
import { createServiceArchive, type ArchiveDeps, type ArchiveEngine, type ArchiveRunner } from '@craig/retention';
import { consumerOptions, serviceCore, type ConsumerDeps, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { announceArchivedBatch, RULES_ARCHIVE_SPECS } from './archive-specs.ts';
import { startEvaluateConsumer } from './consumers.ts';
import { registerRoutes } from './routes.ts';

/** The object store and settings ARCHIVE_HOT_WINDOW_DAYS, ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES. */
export type RulesArchiveDeps = ArchiveDeps;

export interface RulesDeps extends ServiceCoreDeps, ConsumerDeps {
  readonly archive: RulesArchiveDeps;
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
  const { app, outbox, logger } = serviceCore('rules', deps);
  const { engine, runner: archive } = createServiceArchive({
    service: 'rules',
    databaseUrl: deps.databaseUrl,
    specs: RULES_ARCHIVE_SPECS,
    archive: deps.archive,
    registry: deps.registry,
    logger,
    onBatchArchived: announceArchivedBatch,
  });
  registerRoutes(app, { sql: deps.sql, archive });
  return { app, outbox, engine, archive, startConsumers: () => startEvaluateConsumer(consumerOptions('rules', deps, logger)) };
}
