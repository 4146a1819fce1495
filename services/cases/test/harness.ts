import { call as inject, serviceHarness, type Method, type ServiceHarness } from '@craig/service-testkit';
import type { FastifyInstance } from 'fastify';
import { CASES_MIGRATION_SETS } from '../src/migrations.ts';
import { createService, type CasesService } from '../src/service.ts';

export { ADMIN_TOKEN } from '@craig/service-testkit';
export type CasesHarness = ServiceHarness<CasesService>;

/** A migrated cases database, a PostgreSQL bus and the service on them (not listening; use `app.inject`). */
export function casesHarness(): Promise<CasesHarness> {
  return serviceHarness({ name: 'cases', migrations: CASES_MIGRATION_SETS, build: ({ deps }) => createService(deps) });
}

/** Inject a request (an optional JSON body) and return status and parsed body. */
export const call = (app: FastifyInstance, method: Method, url: string, body?: unknown) => inject(app, method, url, { body });
