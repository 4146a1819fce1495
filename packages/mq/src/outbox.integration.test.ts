// The outbox: staging in the caller's transaction, the drain (claim held across the publish,
// stamped only after a confirm), parking, redrive, and a broker outage that must not burn
// attempts. Against the PostgreSQL bus and, for the outage, RabbitMQ behind a TCP relay.
import { randomUUID } from 'node:crypto';
import { createClient, isUuidv7, uuidv7Time, type Sql } from '@craig/db';
import { eventually, rabbitmq, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { busDatabase, refusePoisonMessages, serviceDatabase } from '../test/helpers.ts';
import { tcpProxy } from '../test/tcp-proxy.ts';
import { decodeEnvelope, type EventEnvelope } from './envelope.ts';
import { InvalidEventError, PayloadTooLargeError } from './errors.ts';
import { OutboxWorker, type OutboxWorkerOptions } from './outbox-worker.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { createRabbitMqTransport } from './rabbitmq-transport.ts';
import { redriveParked } from './redrive.ts';
import { stageEvent } from './stage-event.ts';
import type { Delivery, Subscription, Transport } from './transport.ts';

let db: TestDatabase;
let bus: TestDatabase;
let pool: Sql;
let transport: Transport;
let observer: Subscription;
const seen: EventEnvelope[] = [];
const windows = { outboxDays: 30, inboxDays: 31 };

beforeAll(async () => {
  [db, bus] = await Promise.all([serviceDatabase(2), busDatabase(1)]);
  pool = createClient(db.url, { service: 'outbox-test', max: 4 });
  transport = await createPostgresBusTransport({ url: bus.url, service: 'outbox-test', maxMessageBytes: 4096, pollIntervalMs: 50 });
  observer = await transport.subscribe({ consumer: 'observer', patterns: ['#'], maxRetries: 0, prefetch: 1 }, async (d: Delivery) => void seen.push(decodeEnvelope(d.body)));
  // A bus that refuses one kind of message outright: a per-message failure, not an outage.
  await refusePoisonMessages(bus.sql);
});
afterAll(async () => {
  await observer.close();
  await transport.close();
  await pool.end();
  await Promise.all([db.drop(), bus.drop()]);
});
beforeEach(async () => {
  await db.sql`truncate event_outbox`;
  seen.length = 0;
});

const worker = (overrides: Partial<OutboxWorkerOptions> = {}) =>
  new OutboxWorker({ service: 'cases', sql: pool, databaseUrl: db.url, transport, retention: windows, maxAttempts: 3, registry: new Registry(), batchSize: 50, ...overrides });

const stage = (n: number, eventType = 'case.opened') =>
  pool.begin(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await stageEvent(tx, { aggregateType: 'case', aggregateId: `c${i}`, eventType, payload: { i } })).eventId);
    return ids;
  });

/** `n` events whose payload is a JSON string of `chars` characters. */
const stageSized = (n: number, chars: number) =>
  pool.begin(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await stageEvent(tx, { aggregateType: 'case', aggregateId: `c${i}`, eventType: 'case.opened', payload: 'x'.repeat(chars) })).eventId);
    return ids;
  });

const row = async (eventId: string) => (await db.sql`select published_at, created_at, attempts, parked_at, parked_reason, last_error, next_attempt_at from event_outbox where event_id = ${eventId}`)[0]!;

describe('stageEvent', () => {
  it('joins the caller transaction: staged on commit, gone on rollback', async () => {
    const [kept] = await stage(1);
    await expect(
      pool.begin(async (tx) => {
        await stageEvent(tx, { aggregateType: 'case', aggregateId: 'x', eventType: 'case.opened', payload: {} });
        throw new Error('business write failed');
      }),
    ).rejects.toThrow('business write failed');
    expect(await db.sql`select event_id::text from event_outbox`).toEqual([{ event_id: kept }]);
  });

  it('refuses a bad event naming the field and value, and an oversize payload with its size', async () => {
    const bad = (e: Record<string, unknown>) => pool.begin((tx) => stageEvent(tx, { aggregateType: 'case', aggregateId: '1', eventType: 'case.opened', payload: {}, ...e }));
    await expect(bad({ eventType: 'case opened' })).rejects.toMatchObject({ code: 'invalid_event', field: 'eventType', value: 'case opened' });
    await expect(bad({ eventId: 'nope' })).rejects.toMatchObject({ code: 'invalid_event', field: 'eventId' });
    await expect(bad({ aggregateId: '' })).rejects.toBeInstanceOf(InvalidEventError);
    await expect(bad({ headers: { 'x-craig-attempt': '1' } })).rejects.toMatchObject({ field: 'headers.x-craig-attempt' });
    await expect(bad({ payload: { s: 'a\u0000b' } })).rejects.toMatchObject({ field: 'payload' });
    await expect(bad({ payload: undefined })).rejects.toMatchObject({ field: 'payload' });
    await expect(bad({ payload: { big: 'x'.repeat(300 * 1024) } })).rejects.toMatchObject({ code: 'payload_too_large', limit: 256 * 1024 });
    await expect(pool.begin((tx) => stageEvent(tx, { aggregateType: 'a', aggregateId: '1', eventType: 'a.b', payload: 'x'.repeat(100) }, { maxPayloadBytes: 50 }))).rejects.toBeInstanceOf(PayloadTooLargeError);
    const id = randomUUID();
    await bad({ eventId: id });
    await expect(bad({ eventId: id })).rejects.toMatchObject({ code: 'invalid_event', field: 'eventId', value: id });
    expect((await db.sql`select count(*)::int as n from event_outbox`)[0]!.n).toBe(1);
  });

  it('gives an event without an id a UUIDv7 that sorts in staging order, and keeps a caller id as it is', async () => {
    const before = Date.now();
    const first = await stage(3);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await stage(3);
    const own = randomUUID();
    await pool.begin((tx) => stageEvent(tx, { eventId: own, aggregateType: 'case', aggregateId: 'x', eventType: 'case.opened', payload: {} }));
    for (const id of [...first, ...second]) {
      expect(isUuidv7(id), id).toBe(true);
      expect(uuidv7Time(id)).toBeGreaterThanOrEqual(before);
    }
    // A later millisecond sorts after every id of an earlier one, in the index as in the text.
    const later = await db.sql<{ event_id: string }[]>`select event_id::text from event_outbox where event_id > all(${first}::uuid[]) and event_id <> ${own}::uuid order by event_id`;
    expect(later.map((r) => r.event_id).sort()).toEqual([...second].sort());
    expect((await db.sql`select event_id::text from event_outbox where event_id = ${own}::uuid`)[0]!.event_id).toBe(own);
  });
});

describe('OutboxWorker.drainOnce', () => {
  it('publishes pending rows oldest first and stamps published_at after the confirm', async () => {
    // Twelve rows (ids of one and two digits) in batches of five: each batch is the next five.
    const ids = await stage(12);
    const w = worker({ batchSize: 5 });
    expect(await w.drainOnce()).toEqual({ claimed: 5, published: 5, failed: 0, parked: 0, unavailable: 0 });
    await eventually(() => expect(seen.map((e) => e.eventId)).toEqual(ids.slice(0, 5)));
    expect(await w.drainOnce()).toMatchObject({ claimed: 5, published: 5 });
    expect(await w.drainOnce()).toMatchObject({ claimed: 2, published: 2 });
    await eventually(() => expect(seen.map((e) => e.eventId)).toEqual(ids));
    expect(seen[0]).toMatchObject({ eventType: 'case.opened', aggregateType: 'case', aggregateId: 'c0', source: 'cases', payload: { i: 0 }, headers: {} });
    expect(seen[11]).toMatchObject({ aggregateId: 'c11', payload: { i: 11 } });
    for (const id of ids) {
      const r = await row(id);
      expect(r.published_at).not.toBeNull();
      expect(r.published_at.getTime()).toBeGreaterThanOrEqual(r.created_at.getTime());
    }
    expect(await worker().drainOnce()).toMatchObject({ claimed: 0 });
  });

  it('holds each claim across the publish: concurrent drains never publish a row twice', async () => {
    const ids = await stage(200);
    // The real bus, made slow, so the four drains overlap while they hold their claims.
    const slow: Transport = { ...transport, kind: transport.kind, maxMessageBytes: transport.maxMessageBytes, publish: async (m) => (await new Promise((r) => setTimeout(r, 50)), transport.publish(m)) };
    const w = worker({ transport: slow, batchSize: 30 });
    const drains = async () => {
      let total = 0;
      for (let r = await w.drainOnce(); r.claimed > 0; r = await w.drainOnce()) total += r.published;
      return total;
    };
    const totals = await Promise.all([drains(), drains(), drains(), drains()]);
    expect(totals.reduce((a, b) => a + b, 0)).toBe(200);
    expect(totals.filter((t) => t > 0).length).toBeGreaterThan(1);
    await eventually(() => expect(seen).toHaveLength(200));
    expect(new Set(seen.map((e) => e.eventId))).toEqual(new Set(ids));
  });

  it('drains a backlog with several batches in flight, still publishing in staging order', async () => {
    const ids = await stage(60);
    const w = worker({ batchSize: 7, drainLanes: 3 });
    expect(await w.drain()).toEqual({ claimed: 60, published: 60, failed: 0, parked: 0, unavailable: 0 });
    await eventually(() => expect(seen).toHaveLength(60));
    expect(seen.map((e) => e.eventId)).toEqual(ids);
  });

  it('stops a claim at its byte budget and locks no row past it: the next claim takes the rows right after', async () => {
    // Each row carries 1,004 bytes of payload and headers text ('"xx…x"' and '{}').
    const ids = await stageSized(10, 1000);
    const budget = { batchSize: 50, batchBytes: 2500 };
    // The first drain holds its claim (inside its publish) until released.
    let claimed!: () => void;
    let release!: () => void;
    const holding = new Promise<void>((r) => (claimed = r));
    const gate = new Promise<void>((r) => (release = r));
    const held: Transport = { ...transport, kind: transport.kind, maxMessageBytes: transport.maxMessageBytes, publish: async (m) => (claimed(), await gate, transport.publish(m)) };
    const first = worker({ ...budget, transport: held }).drainOnce();
    await holding;
    // Rows 1–3 reach the budget (3,012 bytes ≥ 2,500); rows 4–6 are free for the next claim.
    expect(await worker(budget).drainOnce()).toEqual({ claimed: 3, published: 3, failed: 0, parked: 0, unavailable: 0 });
    release();
    expect(await first).toEqual({ claimed: 3, published: 3, failed: 0, parked: 0, unavailable: 0 });
    await eventually(() => expect(seen.map((e) => e.eventId)).toEqual([...ids.slice(3, 6), ...ids.slice(0, 3)]));
    // A row larger than the whole budget still goes, alone.
    expect(await worker({ batchBytes: 10 }).drainOnce()).toEqual({ claimed: 1, published: 1, failed: 0, parked: 0, unavailable: 0 });
    expect(await db.sql`select event_id::text from event_outbox where published_at is null order by id`).toEqual(ids.slice(7).map((event_id) => ({ event_id })));
  });

  it('drains a backlog past claims cut by their byte budget, in staging order', async () => {
    const ids = await stageSized(10, 1000);
    // Claims of three rows each (the last one of one row), two in flight: the drain must not
    // take a claim cut by bytes for the end of the backlog.
    const w = worker({ batchSize: 50, batchBytes: 2500, drainLanes: 2 });
    expect(await w.drain()).toEqual({ claimed: 10, published: 10, failed: 0, parked: 0, unavailable: 0 });
    await eventually(() => expect(seen).toHaveLength(10));
    expect(seen.map((e) => e.eventId)).toEqual(ids);
  });

  it('leaves rows untouched, with no attempt counted, when the transport cannot be reached', async () => {
    const closed = await createPostgresBusTransport({ url: bus.url, service: 'closed' });
    await closed.close();
    const [id] = await stage(1);
    const w = worker({ transport: closed });
    for (let i = 0; i < 10; i++) expect(await w.drainOnce()).toMatchObject({ claimed: 1, published: 0, unavailable: 1 });
    expect(await row(id!)).toMatchObject({ published_at: null, attempts: 0, parked_at: null });
  });

  it('parks a malformed row instead of publishing it, and never retries it automatically', async () => {
    const [good] = await stage(1);
    await db.sql`insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
                 values (gen_random_uuid(), 'case', '1', 'case opened', '{}', '{}'), (gen_random_uuid(), 'case', '2', 'case.opened', '{}', '[1]')`;
    const registry = new Registry();
    const w = worker({ registry });
    expect(await w.drainOnce()).toEqual({ claimed: 3, published: 1, failed: 0, parked: 2, unavailable: 0 });
    const parked = await db.sql`select aggregate_id, parked_reason, last_error, published_at from event_outbox where parked_at is not null order by id`;
    expect(parked.map((p) => [p.aggregate_id, p.parked_reason, p.published_at])).toEqual([
      ['1', 'malformed', null],
      ['2', 'malformed', null],
    ]);
    expect(parked[0]!.last_error).toContain('eventType');
    expect(await w.drainOnce()).toMatchObject({ claimed: 0 });
    expect(await w.refreshGauges()).toEqual({ pending: 0, parked: 2 });
    expect((await registry.getSingleMetric('event_outbox_parked')!.get()).values[0]!.value).toBe(2);
    await eventually(() => expect(seen.map((e) => e.eventId)).toEqual([good]));
  });

  it('counts a per-message failure as an attempt with backoff, and parks the row at OUTBOX_MAX_ATTEMPTS', async () => {
    const [poison] = await stage(1, 'poison.event');
    const [fine] = await stage(1);
    const w = worker({ maxAttempts: 3 });
    // Batched with a good row: only the culprit is charged.
    expect(await w.drainOnce()).toEqual({ claimed: 2, published: 1, failed: 1, parked: 0, unavailable: 0 });
    let r = await row(poison!);
    expect(r).toMatchObject({ attempts: 1, published_at: null, parked_at: null });
    expect(r.last_error).toContain('poison message refused');
    expect(r.next_attempt_at.getTime()).toBeGreaterThan(Date.now() - 5000);
    // Backing off: not claimed until due.
    expect(await w.drainOnce()).toMatchObject({ claimed: 0 });
    const due = () => db.sql`update event_outbox set next_attempt_at = now() - interval '1 second' where event_id = ${poison!}`;
    await due();
    expect(await w.drainOnce()).toMatchObject({ failed: 1, parked: 0 });
    await due();
    expect(await w.drainOnce()).toMatchObject({ failed: 0, parked: 1 });
    r = await row(poison!);
    expect(r).toMatchObject({ attempts: 3, parked_reason: 'max_attempts', published_at: null });
    expect(await row(fine!)).toMatchObject({ attempts: 0 });
  });

  it('parks a row whose message exceeds the transport limit (a retry cannot help)', async () => {
    const [big] = await pool.begin(async (tx) => [(await stageEvent(tx, { aggregateType: 'case', aggregateId: '1', eventType: 'case.opened', payload: { s: 'x'.repeat(5000) } })).eventId]);
    expect(await worker().drainOnce()).toMatchObject({ parked: 1, published: 0 });
    expect(await row(big)).toMatchObject({ parked_reason: 'oversize', attempts: 0 });
  });

  it('redriveParked sends parked rows again with a fresh attempt budget', async () => {
    const [poison] = await stage(1, 'poison.event');
    await db.sql`update event_outbox set attempts = 3 where event_id = ${poison!}`;
    expect(await worker().drainOnce()).toMatchObject({ parked: 1 });
    // The cause is fixed (here: the row's type), then the operator redrives.
    await db.sql`update event_outbox set event_type = 'case.fixed' where event_id = ${poison!}`;
    expect(await redriveParked(db.sql, windows, { reason: 'malformed' })).toEqual({ redriven: 0, refused: 0 });
    expect(await redriveParked(db.sql, windows, { reason: 'max_attempts' })).toEqual({ redriven: 1, refused: 0 });
    expect(await row(poison!)).toMatchObject({ parked_at: null, parked_reason: null, attempts: 0 });
    expect(await worker().drainOnce()).toMatchObject({ published: 1 });
    await eventually(() => expect(seen.map((e) => e.eventId)).toContain(poison));
  });

  // Found by the HTTP fuzzer: ids "5404763633543596589" and "9986133749663848685" passed the route's
  // 19-digit pattern, and the second, past int8, failed the `::bigint[]` cast (22003): a 500.
  it.each(['9986133749663848685', '9223372036854775808', '0', 0, -1, 1.5, 'x'])('redriveParked refuses the id %s as an InvalidRedriveIdError before touching a row', async (id) => {
    await expect(redriveParked(db.sql, windows, { ids: ['5404763633543596589', id] })).rejects.toMatchObject({ name: 'InvalidRedriveIdError', code: 'invalid_redrive_id', id });
  });

  it('redriveParked takes the largest bigint id', async () => {
    expect(await redriveParked(db.sql, windows, { ids: ['9223372036854775807', 1n, 2] })).toEqual({ redriven: 0, refused: 0 });
  });
});

describe('OutboxWorker against a RabbitMQ outage', () => {
  it('does not burn attempts while the broker is unreachable, backs off, and publishes once it is back', async () => {
    const url = await rabbitmq();
    const exchange = `craig.test.outage.${randomUUID().slice(0, 8)}`;
    const proxy = await tcpProxy(new URL(url).hostname, Number(new URL(url).port || 5672));
    const rabbit = await createRabbitMqTransport({ url: proxy.via(url), exchange, service: 'outage', reconnect: { initialDelayMs: 20, maxDelayMs: 100 }, publishTimeoutMs: 2000 });
    const got: string[] = [];
    const sub = await rabbit.subscribe({ consumer: 'watch', patterns: ['#'], maxRetries: 0 }, async (d) => void got.push(d.eventId));
    try {
      const ids = await stage(5);
      proxy.cut();
      const w = worker({ transport: rabbit, maxAttempts: 3, pollIntervalMs: 10, maxBackoffMs: 80 });
      // Far more drains than OUTBOX_MAX_ATTEMPTS: none of them is the rows' fault.
      await eventually(async () => expect(await w.drainOnce()).toMatchObject({ unavailable: 5 }));
      for (let i = 0; i < 10; i++) expect(await w.drainOnce()).toMatchObject({ claimed: 5, published: 0, failed: 0, parked: 0, unavailable: 5 });
      // The loop backs off instead of spinning: a tick inside the backoff does not drain.
      expect(w.backoff).toBe(0);
      await w.tick();
      expect(w.backoff).toBeGreaterThan(0);
      expect((await w.tick()).drainSkipped).toBe(true);
      const rows = await db.sql`select attempts, parked_at, published_at from event_outbox`;
      expect(rows.every((r) => r.attempts === 0 && r.parked_at === null && r.published_at === null)).toBe(true);

      proxy.restore();
      await eventually(async () => expect((await w.drainOnce()).published).toBeGreaterThan(0), { timeoutMs: 10_000 });
      await eventually(async () => expect((await db.sql`select count(*)::int as n from event_outbox where published_at is null`)[0]!.n).toBe(0));
      await eventually(() => expect(new Set(got)).toEqual(new Set(ids)), { timeoutMs: 10_000 });
    } finally {
      await sub.close({ graceMs: 0 });
      await rabbit.close({ graceMs: 0 });
      await proxy.close();
      const conn = await connect(url);
      const ch = await conn.createChannel();
      await ch.deleteQueue(`${exchange}.watch`);
      await ch.deleteQueue(`${exchange}.dead-letter`);
      await ch.deleteExchange(exchange);
      await ch.deleteExchange(`${exchange}.dlx`);
      await conn.close();
    }
  });
});
