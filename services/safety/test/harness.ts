import { randomUUID } from 'node:crypto';
import { createClient, migrationTemplate, type Sql } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, encodeEnvelope, inboxHandler, type Transport } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { SAFETY_MIGRATION_SETS } from '../src/migrations.ts';
import { createService, type SafetyService } from '../src/service.ts';

export const ADMIN_TOKEN = 'an-admin-token-for-tests';

export interface SafetyHarness {
  readonly db: TestDatabase;
  readonly bus: TestDatabase;
  readonly transport: Transport;
  readonly sql: Sql;
  readonly service: SafetyService;
  readonly app: FastifyInstance;
  /** Hand a case event to the service's `case.*` consumer through the inbox, as a transport would. */
  deliver(eventType: string, caseId: string, eventId?: string): Promise<void>;
  drop(): Promise<void>;
}

/** A migrated safety database, a PostgreSQL bus and the service on them (not listening; use `app.inject`). */
export async function safetyHarness(): Promise<SafetyHarness> {
  const [db, bus] = await Promise.all([testDatabase({ prefix: 'safety_t', template: migrationTemplate(SAFETY_MIGRATION_SETS), max: 2 }), testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), max: 1 })]);
  const transport = await createPostgresBusTransport({ url: bus.url, service: 'safety-test' });
  const sql = createClient(db.url, { service: 'safety-test', max: 3, idleTimeoutSeconds: 5 });
  const service = createService({ sql, databaseUrl: db.url, registry: new Registry(), adminToken: ADMIN_TOKEN, transport, retention: { outboxDays: 30, inboxDays: 31 }, outboxMaxAttempts: 10 });
  await service.app.ready();
  const [consumer] = service.consumers;
  const handle = inboxHandler({ sql, consumer: consumer!.consumer, handler: consumer!.handler });
  return {
    db,
    bus,
    transport,
    sql,
    service,
    app: service.app,
    deliver: (eventType, caseId, eventId = randomUUID()) =>
      handle({
        consumer: consumer!.consumer,
        eventId,
        routingKey: eventType,
        headers: {},
        attempt: 1,
        redelivered: false,
        body: encodeEnvelope({ eventId, eventType, aggregateType: 'case', aggregateId: caseId, source: 'cases', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: JSON.stringify({ caseId }) }),
      }),
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
