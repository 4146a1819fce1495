// The transport contract: one suite, run against RabbitMQ and the PostgreSQL bus
// (src/rabbitmq-transport.integration.test.ts, src/postgres-bus-transport.integration.test.ts).
import { randomUUID } from 'node:crypto';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageTooLargeError } from '../src/errors.ts';
import type { DeadLetter, Delivery, OutgoingMessage, Transport } from '../src/transport.ts';

export interface ContractHarness {
  /** A new transport, as another process would open it. Closed by the suite. */
  open(): Promise<Transport>;
  /** A consumer name unique to this run (queues are durable). */
  consumer(label: string): string;
  teardown(): Promise<void>;
}

const noDelay = () => 0;

function message(routingKey: string, body: Record<string, unknown> = {}): OutgoingMessage {
  const eventId = randomUUID();
  return { eventId, routingKey, body: JSON.stringify({ eventId, routingKey, ...body }) };
}

/** A handler that records deliveries; `hold` makes it never finish (a consumer that hangs, then dies). */
function recorder<T>(options: { hold?: boolean; fail?: (item: T) => boolean } = {}) {
  const items: T[] = [];
  return {
    items,
    handler: async (item: T) => {
      items.push(item);
      if (options.hold) await new Promise(() => {});
      if (options.fail?.(item)) throw new Error(`boom ${items.length}`);
    },
    async waitFor(n: number, timeoutMs = 10_000): Promise<T[]> {
      await eventually(() => expect(items.length).toBeGreaterThanOrEqual(n), { timeoutMs });
      return items;
    },
  };
}

export function transportContract(name: string, setup: () => Promise<ContractHarness>): void {
  describe(`transport contract: ${name}`, () => {
    let harness: ContractHarness;
    let transport: Transport;
    const opened: Transport[] = [];
    const open = async () => {
      const t = await harness.open();
      opened.push(t);
      return t;
    };

    beforeAll(async () => {
      harness = await setup();
      transport = await open();
    });
    afterAll(async () => {
      await Promise.all(opened.map((t) => t.close({ graceMs: 0 })));
      await harness.teardown();
    });

    it('publishes and consumes, in order, with the body, id and routing key intact', async () => {
      const consumer = harness.consumer('basic');
      const got = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['case.*'], maxRetries: 0, prefetch: 1 }, got.handler);
      // Enough messages that ids cross a digit boundary: order must be numeric, not textual.
      const sent = [message('case.opened', { n: 1 }), { ...message('case.closed', { n: 2 }), headers: { tenant: 't-1', 'trace.id': 'abc' } }, ...Array.from({ length: 10 }, (_, i) => message('case.opened', { n: i + 3 }))];
      expect(await transport.publish(sent)).toEqual(sent.map(() => ({ ok: true })));
      const items = await got.waitFor(sent.length);
      expect(items.map((d) => [d.eventId, d.routingKey, d.body, d.attempt, d.consumer])).toEqual(sent.map((m) => [m.eventId, m.routingKey, m.body, 1, consumer]));
      expect(items.slice(0, 3).map((d) => d.headers)).toEqual([{}, { tenant: 't-1', 'trace.id': 'abc' }, {}]);
      await sub.close();
    });

    it('delivers headers that a whole batch shares on every message of it', async () => {
      const consumer = harness.consumer('shared-headers');
      const got = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['case.*'], maxRetries: 0, prefetch: 1 }, got.handler);
      // One headers object for every message, as an outbox drain sends its retention windows.
      const headers = { 'outbox-days': '30', 'inbox-days': '31' };
      const sent = Array.from({ length: 5 }, (_, i) => ({ ...message(i % 2 ? 'case.closed' : 'case.opened', { n: i }), headers }));
      expect(await transport.publish(sent)).toEqual(sent.map(() => ({ ok: true })));
      const items = await got.waitFor(sent.length);
      expect(items.map((d) => [d.eventId, d.routingKey, d.headers])).toEqual(sent.map((m) => [m.eventId, m.routingKey, headers]));
      await sub.close();
    });

    it('carries any body text intact, alone or in a batch, whatever it holds', async () => {
      const consumer = harness.consumer('bodies');
      const got = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['body.*'], maxRetries: 0, prefetch: 1 }, got.handler);
      const tricky = ['', '{"q":"\\"}', 'line\nbreak\ttab\r', '"quoted", {braces}, \\back\\slash', 'ünïcødé ✓ 𝄞 日本', ' ', ','];
      const body = (routingKey: string, text: string): OutgoingMessage => ({ eventId: randomUUID(), routingKey, body: text });
      // A batch of plain text (the PostgreSQL bus splits it on a separator none of it holds),
      // a batch where one body holds that separator (sent as JSON instead), and lone messages,
      // one of them empty.
      const plain = tricky.map((t) => body('body.plain', t));
      const separated = [body('body.sep', 'before\x1eafter'), body('body.sep', '\x1e'), body('body.sep', '')];
      const alone = [body('body.alone', ''), body('body.alone', 'x\x1ey')];
      for (const batch of [plain, separated, ...alone.map((m) => [m])]) expect(await transport.publish(batch)).toEqual(batch.map(() => ({ ok: true })));
      const sent = [...plain, ...separated, ...alone];
      const items = await got.waitFor(sent.length);
      expect(items.map((d) => [d.eventId, d.routingKey, d.body])).toEqual(sent.map((m) => [m.eventId, m.routingKey, m.body]));
      await sub.close();
    });

    it('fans out to every consumer whose patterns match, and to no other', async () => {
      const [a, b, c] = [harness.consumer('fan-a'), harness.consumer('fan-b'), harness.consumer('fan-c')];
      const ga = recorder<Delivery>();
      const gb = recorder<Delivery>();
      const gc = recorder<Delivery>();
      const subs = [
        await transport.subscribe({ consumer: a, patterns: ['case.*'], maxRetries: 0, prefetch: 1 }, ga.handler),
        await transport.subscribe({ consumer: b, patterns: ['#'], maxRetries: 0, prefetch: 1 }, gb.handler),
        await transport.subscribe({ consumer: c, patterns: ['placement.*', 'fan.end'], maxRetries: 0, prefetch: 1 }, gc.handler),
      ];
      const m = message('case.opened');
      const end = message('fan.end');
      expect(await transport.publish([m, end])).toEqual([{ ok: true }, { ok: true }]);
      await Promise.all([ga.waitFor(1), gb.waitFor(2), gc.waitFor(1)]);
      expect(ga.items.map((d) => d.eventId)).toEqual([m.eventId]);
      expect(gb.items.map((d) => d.eventId)).toEqual([m.eventId, end.eventId]);
      // c saw the end marker, so it would have seen case.opened (published before it) if routed.
      expect(gc.items.map((d) => d.eventId)).toEqual([end.eventId]);
      await Promise.all(subs.map((s) => s.close()));
    });

    it('routes by topic pattern: * is one word, # is zero or more', async () => {
      const star = harness.consumer('topic-star');
      const hash = harness.consumer('topic-hash');
      const mid = harness.consumer('topic-mid');
      const gs = recorder<Delivery>();
      const gh = recorder<Delivery>();
      const gm = recorder<Delivery>();
      const subs = [
        await transport.subscribe({ consumer: star, patterns: ['case.*', 'end'], maxRetries: 0, prefetch: 1 }, gs.handler),
        await transport.subscribe({ consumer: hash, patterns: ['#'], maxRetries: 0, prefetch: 1 }, gh.handler),
        await transport.subscribe({ consumer: mid, patterns: ['rule.#.failed', 'end'], maxRetries: 0, prefetch: 1 }, gm.handler),
      ];
      const keys = ['case.opened', 'case.opened.late', 'cases.opened', 'case', 'rule.failed', 'rule.x.y.failed', 'rule.x', 'rule.failed.x', 'end'];
      const sent = keys.map((k) => message(k));
      expect((await transport.publish(sent)).every((o) => o.ok)).toBe(true);
      await Promise.all([gs.waitFor(2), gh.waitFor(keys.length), gm.waitFor(3)]);
      expect(gs.items.map((d) => d.routingKey)).toEqual(['case.opened', 'end']);
      expect(gh.items.map((d) => d.routingKey)).toEqual(keys);
      expect(gm.items.map((d) => d.routingKey)).toEqual(['rule.failed', 'rule.x.y.failed', 'end']);
      await Promise.all(subs.map((s) => s.close()));
    });

    it('redelivers what a consumer held unacknowledged when it died', async () => {
      const consumer = harness.consumer('redeliver');
      const dying = await open();
      const held = recorder<Delivery>({ hold: true });
      await dying.subscribe({ consumer, patterns: ['redeliver.*'], maxRetries: 0, prefetch: 1 }, held.handler);
      const m = message('redeliver.me');
      expect(await transport.publish([m])).toEqual([{ ok: true }]);
      await held.waitFor(1);
      // The process dies: its handler never finished, nothing was acknowledged.
      await dying.close({ graceMs: 0 });
      const next = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['redeliver.*'], maxRetries: 0, prefetch: 1 }, next.handler);
      const [again] = await next.waitFor(1);
      expect(again?.eventId).toBe(m.eventId);
      expect(again?.body).toBe(m.body);
      await sub.close();
    });

    it('acknowledges what was in flight when a subscription closes gracefully', async () => {
      const consumer = harness.consumer('graceful');
      const first = await open();
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const seen: string[] = [];
      const sub = await first.subscribe({ consumer, patterns: ['graceful.*'], maxRetries: 0, prefetch: 1 }, async (d) => {
        seen.push(d.eventId);
        await gate;
      });
      const [m, end] = [message('graceful.one'), message('graceful.end')];
      await transport.publish([m]);
      await eventually(() => expect(seen).toEqual([m.eventId]));
      const closing = sub.close({ graceMs: 10_000 });
      release();
      await closing;
      await first.close();
      const after = recorder<Delivery>();
      const again = await transport.subscribe({ consumer, patterns: ['graceful.*'], maxRetries: 0, prefetch: 1 }, after.handler);
      await transport.publish([end]);
      await after.waitFor(1);
      expect(after.items.map((d) => d.eventId)).toEqual([end.eventId]);
      await again.close();
    });

    it('retries a failing handler with increasing attempts, then dead-letters it with its error', async () => {
      const consumer = harness.consumer('dlq');
      const got = recorder<Delivery>({ fail: () => true });
      const sub = await transport.subscribe({ consumer, patterns: ['dlq.*'], maxRetries: 2, maxDeliveries: 1, prefetch: 1, retryDelayMs: noDelay }, got.handler);
      const m = message('dlq.poison', { poison: true });
      const before = await transport.deadLetterCount();
      expect(await transport.publish([m])).toEqual([{ ok: true }]);
      await got.waitFor(3);
      await eventually(async () => expect(await transport.deadLetterCount()).toBe(before + 1));
      expect(got.items.map((d) => [d.eventId, d.attempt])).toEqual([
        [m.eventId, 1],
        [m.eventId, 2],
        [m.eventId, 3],
      ]);
      // Each thrown attempt is a delivery, settled: none of them counts against maxDeliveries (1).
      expect(got.items.map((d) => d.deliveries)).toEqual([1, 2, 3]);
      await sub.close();

      // Consuming the dead-letter queue: a failing dead-letter handler sees it again (dead
      // letters are never dropped); an accepting one removes it.
      const firstSeen = new Set<string>();
      const dead = recorder<DeadLetter>({ fail: (d) => (firstSeen.has(d.eventId) ? false : (firstSeen.add(d.eventId), true)) });
      const dlq = await transport.subscribeDeadLetters({ prefetch: 1, retryDelayMs: noDelay }, dead.handler);
      await eventually(() => expect(dead.items.filter((d) => d.eventId === m.eventId).length).toBe(2));
      const letter = dead.items.find((d) => d.eventId === m.eventId)!;
      expect(letter).toMatchObject({ consumer, routingKey: 'dlq.poison', body: m.body, attempts: 3, deliveries: 3 });
      expect(letter.error).toContain('boom 3');
      expect(Number.isNaN(Date.parse(letter.deadLetteredAt))).toBe(false);
      await eventually(async () => expect(await transport.deadLetterCount()).toBe(0));
      await dlq.close();
    });

    it('dead-letters a message delivered maxDeliveries times without an acknowledgement, instead of handing it out again', async () => {
      const consumer = harness.consumer('limit');
      const m = message('limit.poison');
      const seen: Delivery[] = [];
      // Each instance is handed the message and dies holding it (its handler never settles).
      for (let life = 1; life <= 2; life++) {
        const dying = await open();
        const held = recorder<Delivery>({ hold: true });
        await dying.subscribe({ consumer, patterns: ['limit.*'], maxRetries: 3, maxDeliveries: 2, prefetch: 1 }, held.handler);
        if (life === 1) expect(await transport.publish([m])).toEqual([{ ok: true }]);
        seen.push(...(await held.waitFor(1)));
        await dying.close({ graceMs: 0 });
      }
      expect(seen.map((d) => [d.eventId, d.attempt, d.deliveries, d.redelivered])).toEqual([
        [m.eventId, 1, 1, false],
        [m.eventId, 1, 2, true],
      ]);
      const letters = recorder<DeadLetter>();
      const dlq = await transport.subscribeDeadLetters({ prefetch: 1 }, letters.handler);
      const next = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['limit.*'], maxRetries: 3, maxDeliveries: 2, prefetch: 1 }, next.handler);
      const end = message('limit.end');
      await transport.publish([end]);
      await next.waitFor(1);
      await eventually(() => expect(letters.items.map((l) => l.eventId)).toContain(m.eventId));
      // Not handed out a third time; the message after it flows.
      expect(next.items.map((d) => d.eventId)).toEqual([end.eventId]);
      expect(letters.items.find((l) => l.eventId === m.eventId)).toMatchObject({
        consumer,
        routingKey: 'limit.poison',
        body: m.body,
        attempts: 1,
        deliveries: 2,
        error: 'delivered 2 times without an acknowledgement: its consumer died or timed out each time',
      });
      await Promise.all([sub.close(), dlq.close()]);
    });

    it('counts deaths against the message that kept dying, not against what was in flight beside it', async () => {
      const consumer = harness.consumer('isolate');
      const [a, b, poison, c] = [message('isolate.a'), message('isolate.b'), message('isolate.poison', { poison: true }), message('isolate.c')];
      const handled: Delivery[] = [];
      const poisonSeen: Delivery[] = [];
      // Life 1: the consumer dies with all four in flight. Life 2: the others take a moment
      // (so had they been handed out beside the poison, they would be in flight when it dies
      // again). Then a consumer that lives: the poison must not reach its handler.
      const handlerOf = (life: number) => async (d: Delivery) => {
        if (d.eventId === poison.eventId) {
          poisonSeen.push(d);
          await new Promise(() => {});
        }
        if (life === 1) await new Promise(() => {});
        if (life === 2) await new Promise((resolve) => setTimeout(resolve, 100));
        handled.push(d);
      };
      for (let life = 1; life <= 2; life++) {
        const dying = await open();
        await dying.subscribe({ consumer, patterns: ['isolate.*'], maxRetries: 0, maxDeliveries: 2, prefetch: 4 }, handlerOf(life));
        if (life === 1) expect((await transport.publish([a, b, poison, c])).every((o) => o.ok)).toBe(true);
        await eventually(() => expect(poisonSeen).toHaveLength(life));
        await dying.close({ graceMs: 0 });
      }
      const letters = recorder<DeadLetter>();
      const dlq = await transport.subscribeDeadLetters({ prefetch: 1 }, letters.handler);
      const sub = await transport.subscribe({ consumer, patterns: ['isolate.*'], maxRetries: 0, maxDeliveries: 2, prefetch: 4 }, handlerOf(3));
      await eventually(() => expect(new Set(handled.map((d) => d.eventId))).toEqual(new Set([a.eventId, b.eventId, c.eventId])));
      await eventually(() => expect(letters.items.map((l) => l.eventId)).toContain(poison.eventId));
      // The first death caught the others unsettled, once; after it, the poison was handed out
      // alone, so its second death counted against it only, and none of them was dead-lettered.
      expect(handled.every((d) => d.deliveries === 2)).toBe(true);
      expect(poisonSeen.map((d) => d.deliveries)).toEqual([1, 2]);
      await eventually(async () => expect(await transport.deadLetterCount()).toBe(0));
      expect(letters.items.filter((l) => l.consumer === consumer).map((l) => [l.eventId, l.deliveries])).toEqual([[poison.eventId, 2]]);
      await Promise.all([sub.close(), dlq.close()]);
    });

    it('bounds thrown failures and deaths independently: a death uses no retry, a thrown attempt is no unacknowledged delivery', async () => {
      const consumer = harness.consumer('bounds');
      const m = message('bounds.mixed');
      const seen: Delivery[] = [];
      // Attempt 1 throws (settled: retried as attempt 2); attempt 2 kills its consumer, twice.
      const handler = async (d: Delivery) => {
        seen.push(d);
        if (d.attempt === 1) throw new Error('attempt 1 fails');
        await new Promise(() => {});
      };
      for (let life = 1; life <= 2; life++) {
        const dying = await open();
        await dying.subscribe({ consumer, patterns: ['bounds.*'], maxRetries: 1, maxDeliveries: 2, prefetch: 1, retryDelayMs: noDelay }, handler);
        if (life === 1) expect(await transport.publish([m])).toEqual([{ ok: true }]);
        await eventually(() => expect(seen.filter((d) => d.attempt === 2)).toHaveLength(life));
        await dying.close({ graceMs: 0 });
      }
      expect(seen.map((d) => [d.attempt, d.deliveries])).toEqual([
        [1, 1],
        [2, 2],
        [2, 3],
      ]);
      const letters = recorder<DeadLetter>();
      const dlq = await transport.subscribeDeadLetters({ prefetch: 1 }, letters.handler);
      const sub = await transport.subscribe({ consumer, patterns: ['bounds.*'], maxRetries: 1, maxDeliveries: 2, prefetch: 1, retryDelayMs: noDelay }, handler);
      await eventually(() => expect(letters.items.map((l) => l.eventId)).toContain(m.eventId));
      expect(seen).toHaveLength(3);
      expect(letters.items.find((l) => l.eventId === m.eventId)).toMatchObject({ consumer, attempts: 2, deliveries: 3, error: 'delivered 3 times without an acknowledgement: its consumer died or timed out each time' });
      await Promise.all([sub.close(), dlq.close()]);
    });

    it('refuses an oversize message without sending it, and sends the rest of the batch', async () => {
      const consumer = harness.consumer('oversize');
      const got = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['size.*'], maxRetries: 0, prefetch: 1 }, got.handler);
      const big: OutgoingMessage = { ...message('size.big'), body: 'x'.repeat(transport.maxMessageBytes + 1) };
      const small = message('size.small');
      const [bigOutcome, smallOutcome] = await transport.publish([big, small]);
      expect(bigOutcome).toMatchObject({ ok: false, kind: 'too_large' });
      expect(bigOutcome!.ok === false && bigOutcome!.error).toBeInstanceOf(MessageTooLargeError);
      expect(smallOutcome).toEqual({ ok: true });
      await got.waitFor(1);
      expect(got.items.map((d) => d.eventId)).toEqual([small.eventId]);
      await sub.close();
    });

    it('keeps messages for a durable consumer that is not running, and delivers them when it returns', async () => {
      const consumer = harness.consumer('durable');
      const first = recorder<Delivery>();
      const sub = await transport.subscribe({ consumer, patterns: ['durable.*'], maxRetries: 0, prefetch: 1 }, first.handler);
      await sub.close();
      const sent = [message('durable.a'), message('durable.b')];
      await transport.publish(sent);
      const later = recorder<Delivery>();
      const back = await transport.subscribe({ consumer, patterns: ['durable.*'], maxRetries: 0, prefetch: 1 }, later.handler);
      await later.waitFor(2);
      expect(later.items.map((d) => d.eventId)).toEqual(sent.map((m) => m.eventId));
      expect(first.items).toEqual([]);
      await back.close();
    });

    it('refuses bad consumer names and patterns with a clear error', async () => {
      await expect(transport.subscribe({ consumer: 'Bad Name', patterns: ['#'], maxRetries: 0 }, async () => {})).rejects.toThrow(/consumer/);
      await expect(transport.subscribe({ consumer: harness.consumer('bad'), patterns: ['case.**'], maxRetries: 0 }, async () => {})).rejects.toThrow(/pattern/);
      await expect(transport.subscribe({ consumer: harness.consumer('bad'), patterns: ['#'], maxRetries: 0, maxDeliveries: 0 }, async () => {})).rejects.toThrow('maxDeliveries must be a positive integer: 0');
      await expect(transport.subscribe({ consumer: harness.consumer('bad'), patterns: ['#'], maxRetries: 0, maxDeliveries: 1.5 }, async () => {})).rejects.toThrow('maxDeliveries must be a positive integer: 1.5');
    });
  });
}
