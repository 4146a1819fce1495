// A message whose handler kills its own process (process.exit, SIGKILL: not a thrown error),
// with real child processes restarted by a supervisor loop, on both transports: the message is
// dead-lettered after maxDeliveries deliveries with its delivery count, every other message is
// handled exactly once, and the consumer stops dying.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { eventually, rabbitmq, type TestDatabase } from '@craig/testkit';
import { connect } from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { busDatabase, serviceDatabase } from '../test/helpers.ts';
import type { PoisonConsumerConfig } from '../test/fixtures/poison-consumer.ts';
import { createTransport, type TransportChoice } from './create-transport.ts';
import { encodeEnvelope } from './envelope.ts';
import type { DeadLetter, OutgoingMessage, Transport } from './transport.ts';

const FIXTURE = fileURLToPath(new URL('../test/fixtures/poison-consumer.ts', import.meta.url));
const MAX_DELIVERIES = 3;

interface Child {
  readonly pid: number;
  /** Resolves with how the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly ready: Promise<void>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

function startChild(config: PoisonConsumerConfig): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, JSON.stringify(config)], { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { pid: child.pid!, exited, ready, output: () => out, kill: (signal) => child.kill(signal) };
}

function event(routingKey: string, payload: Record<string, unknown>): OutgoingMessage {
  const eventId = randomUUID();
  const body = encodeEnvelope({ eventId, eventType: routingKey, aggregateType: 'crash', aggregateId: eventId, source: 'crash-test', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: JSON.stringify(payload) });
  return { eventId, routingKey, body };
}

interface Scratch {
  readonly choice: TransportChoice;
  drop(): Promise<void>;
}

async function scratchTransport(kind: 'postgres' | 'rabbitmq', consumer: string): Promise<Scratch> {
  if (kind === 'postgres') {
    const bus = await busDatabase(1);
    return { choice: { kind, busDatabaseUrl: bus.url }, drop: () => bus.drop() };
  }
  const url = await rabbitmq();
  const exchange = `craig.test.crash.${randomBytes(4).toString('hex')}`;
  return {
    choice: { kind, amqpUrl: url, exchange },
    async drop() {
      const conn = await connect(url);
      const ch = await conn.createChannel();
      for (const q of [consumer, 'dead-letter']) await ch.deleteQueue(`${exchange}.${q}`);
      await ch.deleteExchange(exchange);
      await ch.deleteExchange(`${exchange}.dlx`);
      await conn.close();
    },
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.each(['postgres', 'rabbitmq'] as const)('a handler that kills its consumer process, on the %s transport', (kind) => {
  it.each([
    ['process.exit(1)', 'exit'],
    ["process.kill(process.pid, 'SIGKILL')", 'sigkill'],
  ] as const)('%s on the poison message: dead-lettered after maxDeliveries deliveries, the rest handled once, the consumer stops dying', async (_label, die) => {
    const consumer = `crash.${die}`;
    const db: TestDatabase = await serviceDatabase(2);
    cleanups.push(() => db.drop());
    await db.sql`create table seen (event_id uuid not null, deliveries integer, attempt integer not null, redelivered boolean not null, pid integer not null, at timestamptz not null default clock_timestamp())`;
    await db.sql`create table handled (event_id uuid not null, pid integer not null)`;
    const scratch = await scratchTransport(kind, consumer);
    cleanups.push(() => scratch.drop());
    const transport: Transport = await createTransport(scratch.choice, { service: 'crash-test' });
    cleanups.push(() => transport.close({ graceMs: 0 }));
    const letters: DeadLetter[] = [];
    const dlq = await transport.subscribeDeadLetters({}, async (letter) => void letters.push(letter));
    cleanups.push(() => dlq.close({ graceMs: 0 }));

    const config: PoisonConsumerConfig = { transport: scratch.choice, databaseUrl: db.url, consumer, patterns: ['crash.#'], maxRetries: 2, maxDeliveries: MAX_DELIVERIES, prefetch: 8, die };
    // The supervisor: start the consumer, and start it again whenever it dies.
    const deaths: { pid: number; code: number | null; signal: NodeJS.Signals | null }[] = [];
    let current = startChild(config);
    let supervising = true;
    const supervisor = (async () => {
      while (supervising) {
        const child = current;
        const ended = await child.exited;
        if (!supervising) break;
        deaths.push({ pid: child.pid, ...ended });
        // Past this, the message is being redelivered forever (the defect this guards against).
        if (deaths.length > MAX_DELIVERIES + 2) throw new Error(`the consumer died ${deaths.length} times; last output:\n${child.output()}`);
        current = startChild(config);
      }
    })();
    cleanups.push(async () => {
      supervising = false;
      current.kill('SIGKILL');
      await supervisor.catch(() => {});
    });
    await current.ready;

    // Innocent messages on both sides of the poison, in one publish.
    const before = Array.from({ length: 10 }, (_, i) => event('crash.ok', { n: i }));
    const poison = event('crash.poison', { poison: true });
    const after = Array.from({ length: 10 }, (_, i) => event('crash.ok', { n: 10 + i }));
    expect((await transport.publish([...before, poison, ...after])).every((o) => o.ok)).toBe(true);

    const handledIds = async () => (await db.sql<{ event_id: string }[]>`select event_id::text from handled order by event_id`).map((r) => r.event_id);
    await Promise.race([
      eventually(async () => {
        expect(letters.map((l) => l.eventId)).toEqual([poison.eventId]);
        expect(await handledIds()).toHaveLength(20);
      }, { timeoutMs: 60_000, intervalMs: 100 }).catch((error: unknown) => {
        throw new Error(`${deaths.length} deaths; ${String(error)}; child output:\n${current.output()}`);
      }),
      supervisor.then(() => {
        throw new Error('the supervisor stopped');
      }),
    ]);

    // The consumer stopped dying: the living one handles what comes next.
    const living = current;
    const later = Array.from({ length: 5 }, (_, i) => event('crash.ok', { n: 20 + i }));
    expect((await transport.publish(later)).every((o) => o.ok)).toBe(true);
    await eventually(async () => expect(await handledIds()).toHaveLength(25), { timeoutMs: 20_000 });
    expect(current).toBe(living);

    // Exactly maxDeliveries deliveries of the poison, each of which killed its process.
    expect(deaths).toHaveLength(MAX_DELIVERIES);
    expect(deaths.every((d) => (die === 'exit' ? d.code === 1 : d.signal === 'SIGKILL'))).toBe(true);
    const poisonSeen = await db.sql<{ deliveries: number; attempt: number; pid: number }[]>`select deliveries, attempt, pid from seen where event_id = ${poison.eventId} order by at`;
    expect(poisonSeen.map((s) => [s.deliveries, s.attempt])).toEqual(Array.from({ length: MAX_DELIVERIES }, (_, i) => [i + 1, 1]));
    expect(poisonSeen.map((s) => s.pid)).toEqual(deaths.map((d) => d.pid));

    // Dead-lettered once, with its delivery count and an error that says what happened.
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ consumer, eventId: poison.eventId, routingKey: 'crash.poison', body: poison.body, attempts: 1, deliveries: MAX_DELIVERIES });
    expect(letters[0]!.error).toBe(`delivered ${MAX_DELIVERIES} times without an acknowledgement: its consumer died or timed out each time`);

    // Every other message handled exactly once (the inbox absorbs the redeliveries of what the
    // dying consumers had in flight), none of them dead-lettered.
    const expected = [...before, ...after, ...later].map((m) => m.eventId).sort();
    expect(await handledIds()).toEqual(expected);

    const stopped = current;
    supervising = false;
    stopped.kill('SIGTERM');
    expect(await stopped.exited).toEqual({ code: 0, signal: null });
  }, 120_000);
});
