// The figures behind docs/adr/062-delivery-limit.md: consumer throughput of the delivery count
// on both transports (and of quorum queues, the broker-side alternative), what a quorum
// re-declaration does to an existing classic queue, and how many innocent messages a poison
// message that kills its consumer takes with it under each design. A small script, not a
// benchmark suite:
//   node --import tsx packages/mq/test/measure-delivery-limit.ts [--messages 3000] [--rounds 3] [--only bus,rabbitmq,upgrade,collateral]
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { migrationTemplate } from '@craig/db';
import { rabbitmq, testDatabase } from '@craig/testkit';
import { connect, type Channel, type ConsumeMessage } from 'amqplib';
import { BUS_MIGRATIONS, MQ_MIGRATIONS, createPostgresBusTransport, createRabbitMqTransport, encodeEnvelope, inboxHandler, type Delivery, type OutgoingMessage, type Transport } from '../src/index.ts';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '3' }, only: { type: 'string', default: 'bus,rabbitmq,upgrade,collateral' } } });
const N = Number(values.messages);
const ROUNDS = Number(values.rounds);
const only = new Set(values.only.split(','));
const PREFETCH = 8;

function message(routingKey: string, payload: Record<string, unknown> = {}): OutgoingMessage {
  const eventId = randomUUID();
  return { eventId, routingKey, body: encodeEnvelope({ eventId, eventType: routingKey, aggregateType: 'm', aggregateId: eventId, source: 'measure', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: JSON.stringify(payload) }) };
}

async function publishAll(transport: Transport, messages: readonly OutgoingMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 500) {
    const outcomes = await transport.publish(messages.slice(i, i + 500));
    if (!outcomes.every((o) => o.ok)) throw new Error('publish failed');
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const report = (name: string, rates: number[], extra: Record<string, unknown> = {}) => console.log(JSON.stringify({ name, messages: N, prefetch: PREFETCH, msgsPerSecond: Math.round(median(rates)), rounds: rates.map(Math.round), ...extra }));

/** Handle `N` queued messages through a craig subscription; messages per second from subscribe to the last one. */
async function craigRate(open: () => Promise<Transport>, consumer: string, handler?: (d: Delivery) => Promise<void>): Promise<number> {
  const transport = await open();
  const setup = await transport.subscribe({ consumer, patterns: ['m.#'], maxRetries: 0 }, async () => {});
  await setup.close();
  await publishAll(transport, Array.from({ length: N }, () => message('m.x')));
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => (finish = r));
  const started = performance.now();
  const sub = await transport.subscribe({ consumer, patterns: ['m.#'], maxRetries: 0, prefetch: PREFETCH }, async (d) => {
    await handler?.(d);
    if (++done === N) finish();
  });
  await all;
  const rate = N / ((performance.now() - started) / 1000);
  await sub.close();
  await transport.close();
  return rate;
}

async function bus(): Promise<void> {
  for (const variant of ['noop', 'inbox'] as const) {
    const rates: number[] = [];
    const commits: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const db = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'measure_bus', max: 1 });
      const service = variant === 'inbox' ? await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: 'measure_svc', max: 4 }) : undefined;
      const handler = service ? inboxHandler({ sql: service.sql, consumer: 'measure', handler: async () => {} }) : undefined;
      // Commits in the bus database (publishing included), a figure the machine's load does not move.
      const committed = async () => (await db.sql<{ n: string }[]>`select xact_commit::text as n from pg_stat_database where datname = current_database()`)[0]!.n;
      const before = Number(await committed());
      rates.push(await craigRate(() => createPostgresBusTransport({ url: db.url, service: 'measure', pollIntervalMs: 100 }), 'measure', handler));
      await sleep(1500); // backends flush their statistics at most once a second
      commits.push((Number(await committed()) - before) / N);
      await service?.drop();
      await db.drop();
    }
    report(`bus consumer (${variant} handler)`, rates, { busCommitsPerMessage: Number(median(commits).toFixed(3)) });
  }
}

/** Raw amqplib: publish N confirmed to `queue` (declared with `args`), then consume with prefetch and ack. */
async function rawRate(url: string, args: Record<string, unknown>): Promise<number> {
  const conn = await connect(url);
  const queue = `measure.raw.${randomBytes(4).toString('hex')}`;
  const ch = await conn.createConfirmChannel();
  await ch.assertQueue(queue, { durable: true, arguments: args });
  for (let i = 0; i < N; i++) ch.sendToQueue(queue, Buffer.from(message('m.x').body), { persistent: true });
  await ch.waitForConfirms();
  const consumer = await conn.createChannel();
  await consumer.prefetch(PREFETCH);
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => (finish = r));
  const started = performance.now();
  await consumer.consume(queue, (msg) => {
    if (!msg) return; // cancelled: the queue is being deleted
    consumer.ack(msg);
    if (++done === N) finish();
  });
  await all;
  const rate = N / ((performance.now() - started) / 1000);
  await ch.deleteQueue(queue);
  await conn.close();
  return rate;
}

async function rabbit(): Promise<void> {
  const url = await rabbitmq();
  const exchange = `craig.measure.${randomBytes(4).toString('hex')}`;
  const craig: number[] = [];
  const classic: number[] = [];
  const quorum: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    craig.push(await craigRate(() => createRabbitMqTransport({ url, exchange, service: 'measure' }), `rate${r}`));
    classic.push(await rawRate(url, {}));
    quorum.push(await rawRate(url, { 'x-queue-type': 'quorum', 'x-delivery-limit': 4 }));
  }
  report('rabbitmq craig consumer (classic queue)', craig);
  report('rabbitmq raw amqplib consumer, classic queue', classic);
  report('rabbitmq raw amqplib consumer, quorum queue with x-delivery-limit', quorum);
  const conn = await connect(url);
  const ch = await conn.createChannel();
  for (let r = 0; r < ROUNDS; r++) await ch.deleteQueue(`${exchange}.rate${r}`);
  await ch.deleteQueue(`${exchange}.dead-letter`);
  await ch.deleteExchange(exchange);
  await ch.deleteExchange(`${exchange}.dlx`);
  await conn.close();
}

async function upgrade(): Promise<void> {
  const url = await rabbitmq();
  const conn = await connect(url);
  const queue = `measure.upgrade.${randomBytes(4).toString('hex')}`;
  const setup = await conn.createChannel();
  // As every deployment has it today: a classic queue with the transport's dead-letter exchange.
  await setup.assertQueue(queue, { durable: true, deadLetterExchange: 'measure.dlx' });
  const ch = await conn.createChannel();
  ch.on('error', () => {});
  let outcome = 'declared';
  try {
    await ch.assertQueue(queue, { durable: true, deadLetterExchange: 'measure.dlx', arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 4 } });
  } catch (error) {
    outcome = (error as Error).message;
  }
  console.log(JSON.stringify({ name: 'existing classic queue re-declared as quorum', outcome }));
  await setup.deleteQueue(queue);
  await conn.close();
}

interface CollateralResult {
  readonly lives: number;
  readonly poisonDeliveries: number;
  readonly innocentsHandled: number;
  readonly innocentsDeadLettered: number;
}

const INNOCENTS = 20;
const WORK_MS = 20;

/** craig: a consumer whose handler "dies" (drops its transport) on the poison; restarted until it stops dying. */
async function craigCollateral(open: () => Promise<Transport>, consumer: string): Promise<CollateralResult> {
  const publisher = await open();
  const setup = await publisher.subscribe({ consumer, patterns: ['c.#'], maxRetries: 0 }, async () => {});
  await setup.close();
  const poison = message('c.poison');
  const innocents = Array.from({ length: INNOCENTS }, () => message('c.ok'));
  await publishAll(publisher, [...innocents.slice(0, 10), poison, ...innocents.slice(10)]);
  const handled = new Set<string>();
  let poisonDeliveries = 0;
  let lives = 0;
  const letters: string[] = [];
  const dlq = await publisher.subscribeDeadLetters({}, async (l) => void letters.push(l.eventId));
  while (lives < 10 && !letters.includes(poison.eventId)) {
    lives++;
    const transport = await open();
    let died!: () => void;
    const death = new Promise<void>((r) => (died = r));
    await transport.subscribe({ consumer, patterns: ['c.#'], maxRetries: 0, maxDeliveries: 5, prefetch: PREFETCH }, async (d) => {
      if (d.eventId === poison.eventId) {
        poisonDeliveries++;
        void transport.close({ graceMs: 0 }).then(died);
        await new Promise(() => {});
      }
      await sleep(WORK_MS);
      handled.add(d.eventId);
    });
    const dead = await Promise.race([death.then(() => true), sleep(3000).then(() => false)]);
    if (!dead) {
      // It stopped dying: let it finish what is left, then stop it.
      for (let waited = 0; handled.size < INNOCENTS && waited < 10_000; waited += 100) await sleep(100);
      await transport.close({ graceMs: 1000 });
      break;
    }
  }
  await sleep(500);
  await dlq.close();
  await publisher.close();
  return { lives, poisonDeliveries, innocentsHandled: handled.size, innocentsDeadLettered: letters.filter((id) => id !== poison.eventId).length };
}

/** Quorum queue with x-delivery-limit, dead-lettering to a DLQ; the consumer closes its connection on the poison. */
async function quorumCollateral(url: string, maxDeliveries: number): Promise<CollateralResult> {
  const tag = randomBytes(4).toString('hex');
  const [queue, dlx, dlq] = [`measure.quorum.${tag}`, `measure.quorum.${tag}.dlx`, `measure.quorum.${tag}.dlq`];
  const admin = await connect(url);
  const ch = await admin.createConfirmChannel();
  await ch.assertExchange(dlx, 'fanout', { durable: true });
  await ch.assertQueue(dlq, { durable: true });
  await ch.bindQueue(dlq, dlx, '');
  // Delivered at most limit + 1 times: the limit is the redeliveries allowed.
  await ch.assertQueue(queue, { durable: true, deadLetterExchange: dlx, arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': maxDeliveries - 1 } });
  const poison = randomUUID();
  const ids = [...Array.from({ length: 10 }, () => randomUUID()), poison, ...Array.from({ length: 10 }, () => randomUUID())];
  for (const id of ids) ch.sendToQueue(queue, Buffer.from(id), { persistent: true, messageId: id });
  await ch.waitForConfirms();
  const handled = new Set<string>();
  let poisonDeliveries = 0;
  let lives = 0;
  while (lives < 10) {
    lives++;
    const conn = await connect(url);
    conn.on('error', () => {});
    const consumer: Channel = await conn.createChannel();
    await consumer.prefetch(PREFETCH);
    let died!: () => void;
    const death = new Promise<void>((r) => (died = r));
    await consumer.consume(queue, (msg: ConsumeMessage | null) => {
      if (!msg) return;
      const id = msg.content.toString();
      if (id === poison) {
        poisonDeliveries++;
        void conn.close().catch(() => {}).then(died);
        return;
      }
      void sleep(WORK_MS).then(() => {
        try {
          consumer.ack(msg);
          handled.add(id);
        } catch {
          // the connection is gone: the broker requeues it
        }
      });
    });
    await Promise.race([death, sleep(3000)]);
    await conn.close().catch(() => {});
    if ((await ch.checkQueue(queue)).messageCount === 0) break;
  }
  const deadLettered: string[] = [];
  for (;;) {
    const m = await ch.get(dlq, { noAck: true });
    if (!m) break;
    deadLettered.push(m.content.toString());
  }
  await ch.deleteQueue(queue);
  await ch.deleteQueue(dlq);
  await ch.deleteExchange(dlx);
  await admin.close();
  return { lives, poisonDeliveries, innocentsHandled: handled.size, innocentsDeadLettered: deadLettered.filter((id) => id !== poison).length };
}

async function collateral(): Promise<void> {
  const url = await rabbitmq();
  console.log(JSON.stringify({ name: 'collateral: quorum queue, x-delivery-limit 4 (5 deliveries)', innocents: INNOCENTS, workMs: WORK_MS, ...(await quorumCollateral(url, 5)) }));
  const exchange = `craig.measure.c.${randomBytes(4).toString('hex')}`;
  console.log(JSON.stringify({ name: 'collateral: craig RabbitMQ (classic queue, maxDeliveries 5)', innocents: INNOCENTS, workMs: WORK_MS, ...(await craigCollateral(() => createRabbitMqTransport({ url, exchange, service: 'measure' }), 'collateral')) }));
  const conn = await connect(url);
  const ch = await conn.createChannel();
  for (const q of ['collateral', 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
  await ch.deleteExchange(exchange);
  await ch.deleteExchange(`${exchange}.dlx`);
  await conn.close();
  const db = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'measure_bus', max: 1 });
  console.log(JSON.stringify({ name: 'collateral: craig PostgreSQL bus (maxDeliveries 5)', innocents: INNOCENTS, workMs: WORK_MS, ...(await craigCollateral(() => createPostgresBusTransport({ url: db.url, service: 'measure', pollIntervalMs: 100 }), 'collateral')) }));
  await db.drop();
}

if (only.has('bus')) await bus();
if (only.has('rabbitmq')) await rabbit();
if (only.has('upgrade')) await upgrade();
if (only.has('collateral')) await collateral();
process.exit(0);
