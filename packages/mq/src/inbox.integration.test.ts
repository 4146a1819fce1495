// The inbox on both transports: handler and dedup insert in one transaction, a duplicate runs
// the handler once, a failing handler is retried then dead-lettered with its error.
import { randomBytes, randomUUID } from 'node:crypto';
import { createClient, type Sql, type TransactionSql } from '@craig/db';
import { eventually, rabbitmq, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busDatabase, serviceDatabase } from '../test/helpers.ts';
import { encodeEnvelope, type EventEnvelope } from './envelope.ts';
import { inboxHandler, startConsumer } from './inbox.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { createRabbitMqTransport } from './rabbitmq-transport.ts';
import type { DeadLetter, Delivery, OutgoingMessage, Transport } from './transport.ts';

let db: TestDatabase;
let pool: Sql;
beforeAll(async () => {
  db = await serviceDatabase(2);
  pool = createClient(db.url, { service: 'inbox-test', max: 3 });
  await db.sql`create table effects (event_id uuid not null, note text not null)`;
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});
beforeEach(async () => {
  await db.sql`truncate event_inbox, effects`;
});

function envelope(eventType = 'case.opened'): OutgoingMessage {
  const eventId = randomUUID();
  const body = encodeEnvelope({ eventId, eventType, aggregateType: 'case', aggregateId: '7', source: 'cases', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: '{"x":1}' });
  return { eventId, routingKey: eventType, body };
}

/** The handler's side effect, written in the inbox transaction. */
const effect = (note: string) => async (event: EventEnvelope, tx: TransactionSql) => {
  await tx`insert into effects (event_id, note) values (${event.eventId}, ${note})`;
};

const effects = async () => db.sql<{ event_id: string; note: string }[]>`select event_id::text, note from effects`;
const inboxRows = async () => (await db.sql<{ n: number }[]>`select count(*)::int as n from event_inbox`)[0]!.n;

describe('inboxHandler (direct)', () => {
  it('two concurrent deliveries of one event: the second waits on the dedup key and skips', async () => {
    const m = envelope();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let runs = 0;
    const handler = inboxHandler({
      sql: pool,
      consumer: 'racer',
      handler: async (event, tx) => {
        runs++;
        await effect('once')(event, tx);
        await gate;
      },
    });
    const delivery: Delivery = { consumer: 'racer', eventId: m.eventId, routingKey: m.routingKey, body: m.body, headers: {}, attempt: 1, deliveries: 1, redelivered: false };
    const first = handler(delivery);
    await eventually(() => expect(runs).toBe(1));
    const second = handler({ ...delivery, deliveries: 2, redelivered: true });
    // The second is blocked on the first's uncommitted dedup row.
    await eventually(async () => expect((await db.sql`select count(*)::int as n from pg_stat_activity where application_name = 'inbox-test' and wait_event_type = 'Lock'`)[0]!.n).toBe(1));
    release();
    await Promise.all([first, second]);
    expect(runs).toBe(1);
    expect(await effects()).toEqual([{ event_id: m.eventId, note: 'once' }]);
  });
});

interface Harness {
  transport: Transport;
  close(): Promise<void>;
}

const harnesses: Array<[string, () => Promise<Harness>]> = [
  [
    'PostgreSQL bus',
    async () => {
      const bus = await busDatabase(1);
      const transport = await createPostgresBusTransport({ url: bus.url, service: 'inbox-test', pollIntervalMs: 50 });
      return { transport, close: async () => (await transport.close({ graceMs: 0 }), await bus.drop()) };
    },
  ],
  [
    'RabbitMQ',
    async () => {
      const url = await rabbitmq();
      const exchange = `craig.test.inbox.${randomBytes(4).toString('hex')}`;
      const transport = await createRabbitMqTransport({ url, exchange, service: 'inbox-test' });
      return {
        transport,
        async close() {
          await transport.close({ graceMs: 0 });
          const conn = await connect(url);
          const ch = await conn.createChannel();
          for (const q of ['dup', 'flaky', 'doomed', 'garbage', 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
          await ch.deleteExchange(exchange);
          await ch.deleteExchange(`${exchange}.dlx`);
          await conn.close();
        },
      };
    },
  ],
];

describe.each(harnesses)('inbox over %s', (_name, open) => {
  let h: Harness;
  beforeAll(async () => {
    h = await open();
  });
  afterAll(() => h.close());

  it('a duplicate delivery runs the handler once', async () => {
    const registry = new Registry();
    const sub = await startConsumer({ transport: h.transport, sql: pool, consumer: 'dup', patterns: ['case.*'], maxRetries: 2, handler: effect('dup'), registry, prefetch: 1 });
    const m = envelope();
    const end = envelope('case.closed');
    // The same event three times (a crash between confirm and commit, a replay), then a marker.
    expect((await h.transport.publish([m, m, m, end])).every((o) => o.ok)).toBe(true);
    await eventually(async () => expect((await effects()).map((e) => e.event_id)).toContain(end.eventId));
    expect((await effects()).map((e) => e.event_id)).toEqual([m.eventId, end.eventId]);
    expect(await inboxRows()).toBe(2);
    const counter = await registry.getSingleMetric('event_inbox_deliveries_total')!.get();
    expect(Object.fromEntries(counter.values.map((v) => [v.labels.outcome, v.value]))).toEqual({ handled: 2, duplicate: 2 });
    await sub.close();
  });

  it('rolls the dedup record back with a failing handler, so the retry runs it again', async () => {
    let calls = 0;
    const sub = await startConsumer({
      transport: h.transport,
      sql: pool,
      consumer: 'flaky',
      patterns: ['case.*'],
      maxRetries: 3,
      retryDelayMs: () => 0,
      handler: async (event, tx, delivery) => {
        calls++;
        await effect(`attempt ${delivery.attempt}`)(event, tx);
        if (delivery.attempt < 3) throw new Error(`transient ${delivery.attempt}`);
      },
    });
    const m = envelope();
    await h.transport.publish([m]);
    await eventually(async () => expect(await effects()).toEqual([{ event_id: m.eventId, note: 'attempt 3' }]));
    expect(calls).toBe(3);
    expect(await inboxRows()).toBe(1);
    await sub.close();
  });

  it('dead-letters past INBOX_MAX_RETRIES with its error, leaving no dedup record', async () => {
    const attempts: number[] = [];
    const sub = await startConsumer({
      transport: h.transport,
      sql: pool,
      consumer: 'doomed',
      patterns: ['case.*'],
      maxRetries: 2,
      retryDelayMs: () => 0,
      handler: async (_e, _tx, d) => {
        attempts.push(d.attempt);
        throw new Error('no such placement');
      },
    });
    const m = envelope();
    await h.transport.publish([m]);
    const dead: DeadLetter[] = [];
    const dlq = await h.transport.subscribeDeadLetters({}, async (d) => void dead.push(d));
    await eventually(() => expect(dead.map((d) => d.eventId)).toContain(m.eventId));
    expect(attempts).toEqual([1, 2, 3]);
    expect(dead.find((d) => d.eventId === m.eventId)).toMatchObject({ consumer: 'doomed', attempts: 3, error: 'no such placement' });
    expect(await inboxRows()).toBe(0);
    await Promise.all([sub.close(), dlq.close()]);
  });

  it('dead-letters a body that is not an envelope at once, without retries', async () => {
    let calls = 0;
    const sub = await startConsumer({ transport: h.transport, sql: pool, consumer: 'garbage', patterns: ['junk.*'], maxRetries: 5, retryDelayMs: () => 0, handler: async () => void calls++ });
    const eventId = randomUUID();
    await h.transport.publish([{ eventId, routingKey: 'junk.x', body: '{"not":"an envelope"}' }]);
    const dead: DeadLetter[] = [];
    const dlq = await h.transport.subscribeDeadLetters({}, async (d) => void dead.push(d));
    await eventually(() => expect(dead.map((d) => d.eventId)).toContain(eventId));
    expect(dead.find((d) => d.eventId === eventId)).toMatchObject({ consumer: 'garbage', attempts: 1 });
    expect(dead.find((d) => d.eventId === eventId)!.error).toContain('invalid event');
    expect(calls).toBe(0);
    await Promise.all([sub.close(), dlq.close()]);
  });
});
