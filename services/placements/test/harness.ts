import { call as inject, caseConsumerHarness, type CaseConsumerHarness, type Method } from '@craig/service-testkit';
import type { FastifyInstance } from 'fastify';
import { PLACEMENTS_MIGRATION_SETS } from '../src/migrations.ts';
import { createService, type PlacementsService } from '../src/service.ts';

export { ADMIN_TOKEN } from '@craig/service-testkit';
export type PlacementsHarness = CaseConsumerHarness<PlacementsService>;

/** A migrated placements database, a PostgreSQL bus and the service on them; `deliver` hands it case events. */
export const placementsHarness = (): Promise<PlacementsHarness> => caseConsumerHarness({ name: 'placements', migrations: PLACEMENTS_MIGRATION_SETS, build: ({ deps }) => createService(deps) });

/** Inject a request (an optional JSON body) and return status and parsed body. */
export const call = (app: FastifyInstance, method: Method, url: string, body?: unknown) => inject(app, method, url, { body });
