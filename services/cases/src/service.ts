import type { OutboxWorker } from '@craig/mq';
import { serviceCore, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { registerRoutes } from './routes.ts';

/** What every service takes (pool, database URL, registry, admin token, transport, windows, outbox tuning). */
export type CasesDeps = ServiceCoreDeps;

export interface CasesService {
  readonly app: FastifyInstance;
  /** Publishes `case.opened` / `case.closed` and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
}

/** The cases service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: CasesDeps): CasesService {
  const { app, outbox } = serviceCore('cases', deps);
  registerRoutes(app, deps.sql);
  return { app, outbox };
}
