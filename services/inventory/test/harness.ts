import { RUNTIME_ROLE } from '@craig/cleanup';
import { createClient, migrate, type Sql } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { inventoryMigrationSets } from '../src/migrations.ts';
import { createService, type InventoryService } from '../src/service.ts';

export const ALLOWED = ['inventory_t*'];
export const ADMIN_TOKEN = 'an-admin-token-for-tests';

export interface ServiceHarness {
  readonly db: TestDatabase;
  readonly admin: Sql;
  readonly sql: Sql;
  readonly service: InventoryService;
  readonly app: FastifyInstance;
  readonly registry: Registry;
  drop(): Promise<void>;
}

/** A migrated inventory database (named to match the allow-list) and the service on it, as the runtime role. */
export async function serviceHarness(): Promise<ServiceHarness> {
  const db = await testDatabase({ prefix: 'inventory_t', max: 2 });
  await migrate(db.url, inventoryMigrationSets({ allowedDatabases: ALLOWED }), { service: 'test' });
  const sql = createClient(db.url, { service: 'inventory-test', max: 3, role: RUNTIME_ROLE, idleTimeoutSeconds: 5 });
  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: db.url,
    registry,
    adminToken: ADMIN_TOKEN,
    cleanup: { collectDeadlineMinutes: 60, jobRetentionDays: 14 },
    runner: { idleMs: 20 },
  });
  await service.app.ready();
  return {
    db,
    admin: db.sql,
    sql,
    service,
    app: service.app,
    registry,
    async drop() {
      await service.runner.stop();
      await service.app.close();
      await sql.end({ timeout: 1 });
      await db.drop();
    },
  };
}

/** A JSON response body; tests assert on it field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Inject a JSON request and return status and body. */
export async function call(app: FastifyInstance, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown): Promise<{ status: number; body: Json }> {
  const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}
