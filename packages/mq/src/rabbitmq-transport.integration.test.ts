import { randomBytes, randomUUID } from 'node:crypto';
import { eventually, rabbitmq } from '@craig/testkit';
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tcpProxy } from '../test/tcp-proxy.ts';
import { transportContract } from '../test/transport-contract.ts';
import { createRabbitMqTransport } from './rabbitmq-transport.ts';

transportContract('RabbitMQ', async () => {
  const url = await rabbitmq();
  const exchange = `craig.test.${randomBytes(4).toString('hex')}`;
  const consumers = new Set<string>();
  return {
    open: () => createRabbitMqTransport({ url, exchange, service: 'contract', maxMessageBytes: 64 * 1024 }),
    consumer(label) {
      consumers.add(label);
      return label;
    },
    async teardown() {
      const conn = await connect(url);
      const ch = await conn.createChannel();
      for (const c of consumers) await ch.deleteQueue(`${exchange}.${c}`);
      await ch.deleteQueue(`${exchange}.dead-letter`);
      await ch.deleteExchange(exchange);
      await ch.deleteExchange(`${exchange}.dlx`);
      await conn.close();
    },
  };
});

describe('RabbitMQ transport recovery', () => {
  let url: string;
  const exchange = `craig.test.recover.${randomBytes(4).toString('hex')}`;
  beforeAll(async () => {
    url = await rabbitmq();
  });
  afterAll(async () => {
    const conn = await connect(url);
    const ch = await conn.createChannel();
    for (const q of ['survivor', 'cancelled', 'stall', 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
    await ch.deleteExchange(exchange);
    await ch.deleteExchange(`${exchange}.dlx`);
    await conn.close();
  });

  it('reconnects with backoff after the connection is lost, re-attaches consumers, and publishes again', async () => {
    const { hostname, port } = new URL(url);
    const proxy = await tcpProxy(hostname, Number(port || 5672));
    const transport = await createRabbitMqTransport({ url: proxy.via(url), exchange, service: 'recover', reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
    const got: string[] = [];
    const sub = await transport.subscribe({ consumer: 'survivor', patterns: ['r.*'], maxRetries: 0 }, async (d) => void got.push(d.eventId));
    try {
      const before = { eventId: randomUUID(), routingKey: 'r.before', body: '{}' };
      expect(await transport.publish([before])).toEqual([{ ok: true }]);
      await eventually(() => expect(got).toEqual([before.eventId]));
      proxy.cut();
      const during = { eventId: randomUUID(), routingKey: 'r.during', body: '{}' };
      await eventually(async () => expect((await transport.publish([during]))[0]).toMatchObject({ ok: false, kind: 'unavailable' }));
      proxy.restore();
      const after = { eventId: randomUUID(), routingKey: 'r.after', body: '{}' };
      await eventually(async () => expect(await transport.publish([after])).toEqual([{ ok: true }]), { timeoutMs: 10_000 });
      await eventually(() => expect(got).toContain(after.eventId), { timeoutMs: 10_000 });
    } finally {
      await sub.close({ graceMs: 0 });
      await transport.close({ graceMs: 0 });
      await proxy.close();
    }
  });

  it('waits for confirms while they keep coming, and gives a batch up only after publishTimeoutMs without one', async () => {
    const { hostname, port } = new URL(url);
    const proxy = await tcpProxy(hostname, Number(port || 5672));
    const transport = await createRabbitMqTransport({ url: proxy.via(url), exchange, service: 'recover', publishTimeoutMs: 300 });
    const conn = await connect(url);
    const batch = (n: number) => Array.from({ length: n }, () => ({ eventId: randomUUID(), routingKey: 's.x', body: '{"x":1}' }));
    let stopTrickle = () => {};
    try {
      const ch = await conn.createChannel();
      await ch.assertQueue(`${exchange}.stall`, { durable: true });
      await ch.bindQueue(`${exchange}.stall`, exchange, 's.*');
      expect(await transport.publish(batch(1))).toEqual([{ ok: true }]);
      // A broker that confirms slowly but steadily: what it sends back goes through one AMQP
      // frame's worth (a basic.ack is 21 bytes) every 200 ms, under the 300 ms timeout. The
      // broker acks 3,000 persisted messages in several frames (5 to 12 seen), so the whole
      // batch takes longer than the timeout: a deadline for the batch would give it up. (A
      // tick's bytes that the broker has not sent yet go through when they come: a loaded CI
      // broker sent its first ack after the first tick, and waiting for the second one, 400 ms
      // in, gave the batch up.)
      proxy.hold();
      stopTrickle = proxy.trickle(21, 200);
      const started = performance.now();
      const slow = await transport.publish(batch(3000));
      const slowMs = performance.now() - started;
      stopTrickle();
      expect(slow.filter((o) => o.ok)).toHaveLength(3000);
      expect(slowMs).toBeGreaterThan(300);
      // A broker that stops answering: the batch is given up after publishTimeoutMs, not hung.
      const stalledAt = performance.now();
      const stalled = await transport.publish(batch(3));
      const stalledMs = performance.now() - stalledAt;
      expect(stalled).toEqual(Array.from({ length: 3 }, () => expect.objectContaining({ ok: false, kind: 'unavailable' })));
      expect(stalledMs).toBeGreaterThanOrEqual(290);
      expect(stalledMs).toBeLessThan(3000);
      proxy.flow();
      await eventually(async () => expect(await transport.publish(batch(1))).toEqual([{ ok: true }]), { timeoutMs: 10_000 });
    } finally {
      // A held connection could not close (its close waits for the broker's answer).
      stopTrickle();
      proxy.flow();
      await conn.close();
      await transport.close({ graceMs: 0 });
      await proxy.close();
    }
  });

  it('consumes again after the broker cancels the consumer (its queue deleted)', async () => {
    const transport = await createRabbitMqTransport({ url, exchange, service: 'recover' });
    const got: string[] = [];
    const sub = await transport.subscribe({ consumer: 'cancelled', patterns: ['c.*'], maxRetries: 0 }, async (d) => void got.push(d.eventId));
    const conn = await connect(url);
    try {
      const ch = await conn.createChannel();
      await ch.deleteQueue(`${exchange}.cancelled`);
      const m = { eventId: randomUUID(), routingKey: 'c.x', body: '{}' };
      // Published until the re-declared queue is bound again and takes it.
      await eventually(async () => {
        await transport.publish([{ ...m, eventId: randomUUID() }]);
        expect(got.length).toBeGreaterThan(0);
      }, { timeoutMs: 10_000, intervalMs: 200 });
    } finally {
      await conn.close();
      await sub.close({ graceMs: 0 });
      await transport.close({ graceMs: 0 });
    }
  });
});
