import { createCleanupRunner, RUNTIME_ROLE, type CleanupRunner } from '@craig/cleanup';
import { walCompressionOf } from '@craig/db';
import type { OutboxWorker } from '@craig/mq';
import { serviceCore, type ServiceCoreDeps } from '@craig/service';
import type { CleanupSettings } from '@craig/settings';
import type { FastifyInstance } from 'fastify';
import { InventoryStore } from './inventory-store.ts';
import { registerRoutes } from './routes.ts';

export interface InventoryDeps extends ServiceCoreDeps {
  /** The role the runner's sessions run as (and `sql` runs as: `createClient(url, { role })`); default the runtime role. */
  readonly role?: string;
  readonly cleanup: Pick<CleanupSettings, 'collectDeadlineMinutes' | 'jobRetentionDays'>;
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
  const { app, outbox, logger } = serviceCore('inventory', deps, {
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
    ...(deps.sweepWalCompression === undefined ? {} : { walCompression: walCompressionOf(deps.sweepWalCompression) }),
  });
  return { app, runner, outbox };
}
