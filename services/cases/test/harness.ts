import { createClient, migrationTemplate, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, type Transport } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { CASES_MIGRATION_SETS } from '../src/migrations.ts';
import { createService, type CasesService } from '../src/service.ts';

export const ADMIN_TOKEN = 'an-admin-token-for-tests';

export interface CasesHarness {
  readonly db: TestDatabase;
  readonly bus: TestDatabase;
  readonly transport: Transport;
  /** The service's pool. */
  readonly sql: Sql;
  readonly service: CasesService;
  readonly app: FastifyInstance;
  drop(): Promise<void>;
}

/** A migrated cases database, a PostgreSQL bus and the service on them (not listening; use `app.inject`). */
export async function casesHarness(): Promise<CasesHarness> {
  const [db, bus] = await Promise.all([testDatabase({ prefix: 'cases_t', template: migrationTemplate(CASES_MIGRATION_SETS), max: 2 }), testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), max: 1 })]);
  const transport = await createPostgresBusTransport({ url: bus.url, service: 'cases-test' });
  const sql = createClient(db.url, { service: 'cases-test', max: 3, idleTimeoutSeconds: 5 });
  const service = createService({ sql, databaseUrl: db.url, registry: new Registry(), adminToken: ADMIN_TOKEN, transport, retention: { outboxDays: 30, inboxDays: 31 }, outboxMaxAttempts: 10 });
  await service.app.ready();
  return {
    db,
    bus,
    transport,
    sql,
    service,
    app: service.app,
    async drop() {
      await service.app.close();
      await sql.end({ timeout: 1 });
      await transport.close();
      await Promise.all([db.drop(), bus.drop()]);
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Inject a request and return status and parsed body. */
export async function call(app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<{ status: number; body: Json }> {
  const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}
