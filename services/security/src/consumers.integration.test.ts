// The audit consumer (`security.audit` on `#`) and the dead-letter consumer, on both transports,
// fed by a real producer's outbox.
import { randomUUID } from 'node:crypto';
import { createClient } from '@craig/db';
import { replayEvents, stageEvent, startConsumer, type Subscription, type Transport } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, counterValue, producer, serviceHarness, type Producer, type ServiceHarness } from '../test/harness.ts';
import { recordDeadLetter } from './audit-store.ts';
import type { AuditConsumers } from './consumers.ts';

describe.each(['postgres', 'rabbitmq'] as const)('security consumers on the %s transport', (kind) => {
  let h: ServiceHarness;
  let cases: Producer;
  let consumers: AuditConsumers;
  let flakyTransport: Transport;
  let flaky: Subscription;

  beforeAll(async () => {
    h = await serviceHarness({ transport: kind });
    cases = await producer(h.bus, 'cases');
    consumers = await h.service.startConsumers();
    // Another service's consumer whose handler always fails: past its retry cap the message is
    // dead-lettered, and security's dead-letter consumer audits it.
    flakyTransport = await h.bus.open('flaky');
    flaky = await startConsumer({
      transport: flakyTransport,
      sql: cases.db.sql,
      consumer: 'cases.flaky',
      patterns: ['placement.*'],
      maxRetries: 1,
      retryDelayMs: () => 10,
      handler: async () => {
        throw new Error('flaky handler: boom');
      },
    });
  });
  afterAll(async () => {
    await flaky?.close({ graceMs: 0 });
    await flakyTransport?.close({ graceMs: 0 });
    await consumers?.close({ graceMs: 0 });
    await cases?.drop();
    await h?.drop();
  });

  it('writes one audit_log row per event, exactly as published, even when the event is delivered twice', async () => {
    // Written as jsonb text, as a SQL writer could: integers beyond 2^53 and decimal scale must survive.
    const staged = { eventId: randomUUID() };
    await cases.db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers)
      values (${staged.eventId}, 'case', 'c-1', 'case.opened', '{"big": 9007199254740993, "price": 1.10, "note": "ü"}', '{"trace": "t-1"}')`;
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    await eventually(async () => expect((await h.db.sql`select 1 from audit_log where event_id = ${staged.eventId}`).length).toBe(1), { timeoutMs: 10_000 });

    // Delivered again: the producer replays its published row.
    const duplicatesBefore = await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'security.audit', outcome: 'duplicate' });
    const replayed = await replayEvents(cases.db.sql, { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() }, { outboxDays: 30, inboxDays: 31 });
    expect(replayed).toMatchObject({ replayed: 1 });
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    await eventually(
      async () => expect(await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'security.audit', outcome: 'duplicate' })).toBe(duplicatesBefore + 1),
      { timeoutMs: 10_000 },
    );

    const rows = await h.db.sql`
      select event_type, aggregate_type, aggregate_id, source, payload::text as payload, headers, occurred_at = ${(await cases.db.sql`select created_at from event_outbox`)[0]!.created_at as Date} as same_instant
      from audit_log where event_id = ${staged.eventId}`;
    expect(rows).toEqual([{ event_type: 'case.opened', aggregate_type: 'case', aggregate_id: 'c-1', source: 'cases', payload: '{"big": 9007199254740993, "note": "ü", "price": 1.10}', headers: { trace: 't-1' }, same_instant: true }]);
    expect(await h.db.sql`select consumer, event_type from event_inbox where event_id = ${staged.eventId}`).toEqual([{ consumer: 'security.audit', event_type: 'case.opened' }]);
  });

  it('audits a message a consumer gave up on past its retry cap in dead_letter_audit, through the dead-letter queue', async () => {
    const staged = await cases.db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'placement', aggregateId: 'p-9', eventType: 'placement.started', payload: { child: 'x' } }));
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    const [letter] = await eventually(
      async () => {
        const found = await h.db.sql<{ consumer: string; message_id: string; event_id: string; routing_key: string; error: string; attempts: number; deliveries: number; body: string }[]>`
          select consumer, message_id, event_id::text, routing_key, error, attempts, deliveries, body from dead_letter_audit where message_id = ${staged.eventId}`;
        expect(found).toHaveLength(1);
        return found;
      },
      { timeoutMs: 15_000 },
    );
    expect(letter).toMatchObject({ consumer: 'cases.flaky', event_id: staged.eventId, routing_key: 'placement.started', attempts: 2, deliveries: 2 });
    expect(letter!.error).toContain('flaky handler: boom');
    expect(JSON.parse(letter!.body)).toMatchObject({ eventId: staged.eventId, eventType: 'placement.started', source: 'cases', payload: { child: 'x' } });
    // The dead letter was consumed (acknowledged) once audited, and the event itself was audited too.
    await eventually(async () => expect(await h.transport.deadLetterCount()).toBe(0), { timeoutMs: 10_000 });
    await eventually(async () => expect((await h.db.sql`select 1 from audit_log where event_id = ${staged.eventId}`).length).toBe(1));
    expect(await counterValue(h.registry, 'security_dead_letters_total', { outcome: 'recorded', consumer: 'cases.flaky' })).toBeGreaterThanOrEqual(1);
  });

  it('audits a message whose consumer died holding it INBOX_MAX_DELIVERIES times, with its delivery count', async () => {
    const staged = await cases.db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'case', aggregateId: 'c-dies', eventType: 'case.closed', payload: { dies: true } }));
    // Another service's consumer whose process dies (its transport and pool drop, the handler
    // never settles) every time it is handed the event; security itself keeps running.
    const handedOut: number[] = [];
    for (let life = 1; life <= 2; life++) {
      const dying = await h.bus.open('dying');
      const pool = createClient(cases.db.url, { service: 'dying', max: 1 });
      await startConsumer({
        transport: dying,
        sql: pool,
        consumer: 'cases.dying',
        patterns: ['case.closed'],
        maxRetries: 5,
        maxDeliveries: 2,
        handler: async (_event, _tx, delivery) => {
          handedOut.push(delivery.deliveries);
          await new Promise(() => {});
        },
      });
      if (life === 1) expect((await cases.outbox.drainOnce()).published).toBe(1);
      await eventually(() => expect(handedOut).toHaveLength(life), { timeoutMs: 10_000 });
      await Promise.all([dying.close({ graceMs: 0 }), pool.end({ timeout: 0 })]);
    }
    // The next instance is not handed it: it is dead-lettered, and security audits it.
    const next = await h.bus.open('dying');
    const survivor = await startConsumer({ transport: next, sql: cases.db.sql, consumer: 'cases.dying', patterns: ['case.closed'], maxRetries: 5, maxDeliveries: 2, handler: async () => void handedOut.push(-1) });
    try {
      const [letter] = await eventually(
        async () => {
          const found = await h.db.sql<{ consumer: string; error: string; attempts: number; deliveries: number }[]>`
            select consumer, error, attempts, deliveries from dead_letter_audit where message_id = ${staged.eventId}`;
          expect(found).toHaveLength(1);
          return found;
        },
        { timeoutMs: 15_000 },
      );
      expect(letter).toEqual({ consumer: 'cases.dying', error: 'delivered 2 times without an acknowledgement: its consumer died or timed out each time', attempts: 1, deliveries: 2 });
      expect(handedOut).toEqual([1, 2]);
      const [row] = await call(h.app, 'GET', '/v1/dead-letters?limit=500').then((res) => (res.body.deadLetters as { messageId: string; attempts: number; deliveries: number }[]).filter((d) => d.messageId === staged.eventId));
      expect(row).toMatchObject({ attempts: 1, deliveries: 2 });
    } finally {
      await survivor.close({ graceMs: 0 });
      await next.close({ graceMs: 0 });
    }
  });

  it('a redelivered dead letter writes nothing; a message id that is not a UUID is kept raw', async () => {
    const letter = { consumer: 'rules.case', eventId: 'not-a-uuid', routingKey: 'case.closed', body: 'not json at all', headers: { a: 'b' }, error: 'InvalidEventError: body is not JSON', attempts: 1, deliveries: 1, deadLetteredAt: new Date().toISOString() };
    expect(await recordDeadLetter(h.sql, letter)).toBe(true);
    expect(await recordDeadLetter(h.sql, letter)).toBe(false);
    expect(await recordDeadLetter(h.sql, { ...letter, eventId: randomUUID() })).toBe(true);
    const rows = await h.db.sql`select message_id, event_id, body, headers from dead_letter_audit where consumer = 'rules.case' and message_id = 'not-a-uuid'`;
    expect(rows).toEqual([{ message_id: 'not-a-uuid', event_id: null, body: 'not json at all', headers: { a: 'b' } }]);
  });
});
