import type { OutboxWorker } from '@craig/mq';
import { createServiceArchive, type ArchiveDeps, type ArchiveEngine, type ArchiveRunner } from '@craig/retention';
import { consumerOptions, serviceCore, type ConsumerDeps, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { announceArchivedBatch, SECURITY_ARCHIVE_SPECS } from './archive-specs.ts';
import { startAuditConsumers, type AuditConsumers } from './consumers.ts';
import { registerRoutes } from './routes.ts';

/** The object store and settings ARCHIVE_HOT_WINDOW_DAYS, ARCHIVE_PREFIX, ARCHIVE_EVERY_MINUTES. */
export type SecurityArchiveDeps = ArchiveDeps;

export interface SecurityDeps extends ServiceCoreDeps, ConsumerDeps {
  readonly archive: SecurityArchiveDeps;
}

export interface SecurityService {
  readonly app: FastifyInstance;
  /** Publishes the outbox (archive announcements) and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** The archive engine over `audit_log` and `dead_letter_audit`; `check()` it at boot. */
  readonly engine: ArchiveEngine;
  /** The archive timer loop (`run(signal)`) and the on-demand cycle. */
  readonly archive: ArchiveRunner;
  /** Subscribe the audit consumer (`#`) and the dead-letter consumer; close them on shutdown. */
  startConsumers(): Promise<AuditConsumers>;
}

/** The security service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: SecurityDeps): SecurityService {
  const { app, outbox, logger } = serviceCore('security', deps);
  const { engine, runner: archive } = createServiceArchive({
    service: 'security',
    databaseUrl: deps.databaseUrl,
    specs: SECURITY_ARCHIVE_SPECS,
    archive: deps.archive,
    registry: deps.registry,
    logger,
    onBatchArchived: announceArchivedBatch,
  });
  registerRoutes(app, { sql: deps.sql, archive });
  return { app, outbox, engine, archive, startConsumers: () => startAuditConsumers(consumerOptions('security', deps, logger)) };
}
