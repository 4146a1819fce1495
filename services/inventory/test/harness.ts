import { RUNTIME_ROLE } from '@craig/cleanup';
import { migrate, type Sql } from '@craig/db';
import { call as inject, serviceHarness as harness, type Method, type ServiceHarness as Harness } from '@craig/service-testkit';
import type { FastifyInstance } from 'fastify';
import { inventoryMigrationSets } from '../src/migrations.ts';
import { createService, type InventoryDeps, type InventoryService } from '../src/service.ts';

export { ADMIN_TOKEN } from '@craig/service-testkit';
export const ALLOWED = ['inventory_t*'];
export interface ServiceHarness extends Harness<InventoryService> {
  /** The database owner's pool (the service's own runs as the runtime role). */
  readonly admin: Sql;
}

/** A migrated inventory database (named to match the allow-list) and the service on it, as the runtime role. */
export async function serviceHarness(options: Pick<InventoryDeps, 'sweepWalCompression'> = {}): Promise<ServiceHarness> {
  const h = await harness({
    name: 'inventory',
    // No template: the allow-listed install refuses a template's name, which is the point.
    migrate: (db, runtime) => migrate(db.url, inventoryMigrationSets({ allowedDatabases: ALLOWED }), { service: 'test', runtime }).then(() => undefined),
    role: RUNTIME_ROLE,
    build: ({ deps }) => createService({ ...deps, cleanup: { collectDeadlineMinutes: 60, jobRetentionDays: 14 }, runner: { idleMs: 20 }, ...options }),
    beforeClose: (service) => service.runner.stop(),
  });
  return { ...h, admin: h.db.sql };
}

/** Inject a JSON request and return status and body. */
export const call = (app: FastifyInstance, method: Method, url: string, body?: unknown) => inject(app, method, url, { body });
