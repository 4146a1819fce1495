import { randomUUID } from 'node:crypto';
import type { Sql } from '@craig/db';
import { encodeEnvelope, inboxHandler, MQ_MIGRATIONS, OutboxWorker, type EventHandler, type Transport } from '@craig/mq';
import { migrationTemplate } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import type { TestTransport } from './transport.ts';

/** A producer service: its own database with the outbox, and an outbox worker on the transport. */
export interface Producer {
  readonly db: TestDatabase;
  readonly outbox: OutboxWorker;
  readonly transport: Transport;
  drop(): Promise<void>;
}

/** Another service publishing on `bus` (its database is named `<prefix>_<service>_…`). */
export async function producer(bus: TestTransport, service: string, prefix: string): Promise<Producer> {
  const db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: `${prefix}_${service}`, max: 2 });
  const transport = await bus.open(service);
  const outbox = new OutboxWorker({ service, sql: db.sql, databaseUrl: db.url, transport, retention: { outboxDays: 30, inboxDays: 31 }, maxAttempts: 5, registry: new Registry() });
  return {
    db,
    outbox,
    transport,
    async drop() {
      await transport.close({ graceMs: 0 });
      await db.drop();
    },
  };
}

/** A JSON response body; tests assert on it field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Inject a request (a JSON `body`, a bearer `token`) and return status and parsed body. */
export async function call(app: FastifyInstance, method: Method, url: string, options: { readonly token?: string; readonly body?: unknown } = {}): Promise<{ status: number; body: Json }> {
  const res = await app.inject({
    method,
    url,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

/** A labelled counter's value from the registry (0 when absent). */
export async function counterValue(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return Number(value?.value ?? 0);
}

/** The encoded envelope of a `case.*` event from cases, as a transport carries it. */
export function caseEventBody(eventType: string, caseId: string, eventId: string): string {
  return encodeEnvelope({ eventId, eventType, aggregateType: 'case', aggregateId: caseId, source: 'cases', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: JSON.stringify({ caseId }) });
}

/** Hand case events to a consumer through the inbox, as a transport would (first attempt). */
export function caseEventDelivery(sql: Sql, consumer: { readonly consumer: string; readonly handler: EventHandler }): (eventType: string, caseId: string, eventId?: string) => Promise<void> {
  const handle = inboxHandler({ sql, consumer: consumer.consumer, handler: consumer.handler });
  return (eventType, caseId, eventId = randomUUID()) =>
    handle({ consumer: consumer.consumer, eventId, routingKey: eventType, headers: {}, attempt: 1, deliveries: 1, redelivered: false, body: caseEventBody(eventType, caseId, eventId) });
}
