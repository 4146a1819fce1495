import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { once } from 'node:events';
import { createClient, migrationTemplate, type Sql, type WalCompressionMethod } from '@craig/db';
import { BUS_MIGRATIONS, createRabbitMqTransport, DEFAULT_DRAIN_BATCH, OutboxWorker, PUBLISH_STATEMENT_BYTES, type Transport } from '@craig/mq';
import { rabbitmq, testDatabase, type TestDatabase } from '@craig/testkit';
import { connect, type ConfirmChannel } from 'amqplib';
import { Registry } from 'prom-client';
import { UsageError, writeLine } from '../command.ts';
import { withCpu } from './backend-cpu.ts';
import { APPS, HEADERS, messagesOf, RETENTION, startBusContender, subscribeSink, type BusContender, type Message } from './bus-contender.ts';
import { machineInfo, roundsOption, runRecord, spread, walCompressionOption } from './rounds.ts';
import { outboxCopy } from './fixtures.ts';
import { hotOutboxCeiling, outboxOption, resetClaimLow, type BenchOutbox } from './hot-outbox.ts';
import { printTable, rate, ratio, writeResult } from './measure.ts';
import type { BenchSuite } from './suite.ts';

/**
 * Run before each contender, outside its timing: vacuum what the previous one left behind (our
 * drain's stamps leave a dead version of every outbox row, which autovacuum would otherwise clean
 * while the next contender runs, charging it to that one) and checkpoint, so that no contender
 * starts in the other's wake or meets a checkpoint the other's WAL forced.
 */
async function settle(db: TestDatabase): Promise<void> {
  await db.sql`vacuum event_outbox`;
  await db.sql`checkpoint`;
}

/**
 * The pending outbox every round of one transport works from, kept as `bench_pending`: one
 * database for all rounds, and our drain's pool kept for all of them too (in this process for
 * RabbitMQ, in its contender process for the bus), as a service keeps its pool. A new backend
 * maps each shared buffer it touches with a page fault of its own (~14,000 for each drain lane's
 * backend in a 100 k-event drain, ~6 µs each on this kind of machine, ADR-074), which a service's
 * long-lived connections paid long before. The ceilings' sessions live across rounds too.
 */
async function pendingOutbox(events: number, outbox: BenchOutbox) {
  const db = await outboxCopy(events, { pending: 'all' });
  try {
    await db.sql`create table bench_pending as select * from event_outbox`;
    // Not laid out again: restore() reloads the rows by INSERT, at the ceiling's fillfactor.
    if (outbox === 'hot-ceiling') await hotOutboxCeiling(db.sql, { relayout: false });
    return {
      db,
      /** Every row pending again, as the copy held them (our drain stamps them all), then {@link settle}. */
      async restore() {
        await db.sql`truncate event_outbox`;
        await db.sql`insert into event_outbox select * from bench_pending order by id`;
        if (outbox === 'hot-ceiling') await resetClaimLow(db.sql);
        await db.sql`analyze event_outbox`;
        await settle(db);
      },
      close: () => db.drop(),
    };
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/** Our drain: OutboxWorker.drain until nothing is pending, on the outbox's long-lived pool. */
async function drainAll(db: TestDatabase, sql: Sql, transport: Transport, batchSize: number, lanes: number, walCompression: WalCompressionMethod | false): Promise<{ ms: number; published: number }> {
  const worker = new OutboxWorker({ service: 'bench', sql, databaseUrl: db.url, transport, retention: RETENTION, maxAttempts: 10, registry: new Registry(), batchSize, drainLanes: lanes, drainWalCompression: walCompression });
  const started = performance.now();
  const r = await worker.drain();
  if (r.unavailable > 0 || r.failed > 0 || r.parked > 0) throw new Error(`drain did not go cleanly: ${JSON.stringify(r)}`);
  return { ms: performance.now() - started, published: r.published };
}

/**
 * The RabbitMQ ceiling: a bare confirm channel, everything published (respecting backpressure),
 * then one waitForConfirms. With `headers`, each message carries the drain's headers, so the
 * broker stores the very messages our drain sends; without, the figure shows what they cost.
 */
async function bareConfirmLoop(channel: ConfirmChannel, exchange: string, messages: readonly Message[], window: number, headers: boolean): Promise<number> {
  const started = performance.now();
  let inWindow = 0;
  for (const m of messages) {
    const more = channel.publish(exchange, m.routingKey, Buffer.from(m.body), { persistent: true, messageId: m.eventId, contentType: 'application/json', ...(headers ? { headers: HEADERS } : {}) });
    if (!more) await once(channel, 'drain');
    if (++inWindow === window) {
      await channel.waitForConfirms();
      inWindow = 0;
    }
  }
  await channel.waitForConfirms();
  return performance.now() - started;
}

interface Round {
  readonly round: number;
  readonly first: 'ours' | 'baseline';
  readonly oursEventsPerSec: number;
  readonly ceilingEventsPerSec: number;
  readonly ratio: number;
  /** The bare ceiling without the drain's headers, measured after both contenders (not part of the ratio). */
  readonly bareNoHeadersEventsPerSec?: number;
  /** PostgreSQL bus only: the CPU each contender's processes used, ms per 1,000 events (absent where the backends' CPU cannot be read). */
  readonly cpuMsPer1000Events?: { readonly ours: BusDrainCpu; readonly ceiling: BareInsertCpu };
}

/**
 * Our drain's CPU into the bus: its outbox sessions (claim, stamp, commit), the transport's bus
 * session (the INSERT) and Node; and the minor page faults of those backends (per 1,000 events
 * too: a backend's first touch of a shared buffer it had not mapped, ADR-074).
 */
interface BusDrainCpu {
  readonly outboxSessions: number;
  readonly busSession: number;
  readonly node: number;
  readonly total: number;
  readonly backendPageFaults: number;
  /** The drain's process's own minor page faults (per 1,000 events, a count). */
  readonly nodePageFaults: number;
}

/** The bare INSERT's CPU: its one session and Node (building and sending the rows); and the minor page faults of its session and of its process. */
interface BareInsertCpu {
  readonly session: number;
  readonly node: number;
  readonly total: number;
  readonly backendPageFaults: number;
  readonly nodePageFaults: number;
}

/** Median [IQR] figures over rounds. */
function summarize(rounds: readonly Round[]) {
  return {
    ours: spread(rounds.map((r) => r.oursEventsPerSec)),
    ceiling: spread(rounds.map((r) => r.ceilingEventsPerSec)),
    ratio: spread(rounds.map((r) => r.ratio)),
  };
}

/**
 * Round 0, not counted: each contender once, ours first. The first run of each pays what its
 * long-lived sessions pay once (a new backend's page faults on the shared buffers it touches,
 * first plans, the transport's channel: ADR-074), which a service's pool paid long before. In
 * round 1 it cost the bare INSERT 28–34 ms of CPU per 1,000 events against 19–23 after
 * (docs/benchmarks.md), and the rounds would charge it to whichever ran first.
 */
async function warmUp(drain: () => Promise<number>, bare: () => Promise<number>, log: (l: string) => void, transport: string, events: number): Promise<WarmUpRound> {
  const ours = await drain();
  const ceiling = await bare();
  log(`${transport} warm-up round (not counted): ours ${Math.round(ours)} ms, the bare ceiling ${Math.round(ceiling)} ms`);
  return { oursEventsPerSec: rate(events, ours), ceilingEventsPerSec: rate(events, ceiling) };
}

/** The warm-up round's figures, recorded beside the counted rounds and in no median. */
interface WarmUpRound {
  readonly oursEventsPerSec: number;
  readonly ceilingEventsPerSec: number;
  readonly cpuMsPer1000Events?: Round['cpuMsPer1000Events'];
}

/** One round: both contenders on one fresh copy of the pending outbox (ours first in odd rounds). */
async function round(n: number, bare: () => Promise<number>, drain: () => Promise<number>, events: number): Promise<Round> {
  let oursMs: number;
  let ceilingMs: number;
  if (n % 2 === 1) {
    oursMs = await drain();
    ceilingMs = await bare();
  } else {
    ceilingMs = await bare();
    oursMs = await drain();
  }
  const o = rate(events, oursMs);
  const c = rate(events, ceilingMs);
  return { round: n, first: n % 2 === 1 ? 'ours' : 'baseline', oursEventsPerSec: o, ceilingEventsPerSec: c, ratio: ratio(o, c) };
}

/** What one transport's rounds run: the suite's options, read once. */
interface DrainSetup {
  readonly events: number;
  readonly batchSize: number;
  readonly lanes: number;
  readonly walCompression: WalCompressionMethod | false;
  readonly outbox: BenchOutbox;
  readonly rounds: number;
}

async function rabbit({ events, batchSize, lanes, walCompression, outbox: outboxKind, rounds }: DrainSetup, log: (l: string) => void) {
  const url = await rabbitmq();
  const exchange = `craig.bench.${randomBytes(4).toString('hex')}`;
  const sink = `${exchange}.sink`;
  const conn = await connect(url);
  const admin = await conn.createChannel();
  await admin.assertExchange(exchange, 'topic', { durable: true });
  await admin.assertQueue(sink, { durable: true });
  await admin.bindQueue(sink, exchange, '#');
  const transport = await createRabbitMqTransport({ url, exchange, service: 'bench' });
  const brokerVersion = String((conn.connection as unknown as { serverProperties?: { version?: string } }).serverProperties?.version ?? 'unknown');
  try {
    const results: Round[] = [];
    let warmUpRound: WarmUpRound | undefined;
    const outbox = await pendingOutbox(events, outboxKind);
    const { db } = outbox;
    const messages = await messagesOf(db.sql);
    const sql = createClient(db.url, { service: APPS.outbox, max: lanes + 1, idleTimeoutSeconds: 0 });
    try {
      for (let n = 0; n <= rounds; n++) {
        const bare = async (headers = true) => {
          await settle(db);
          const confirm = await conn.createConfirmChannel();
          const ms = await bareConfirmLoop(confirm, exchange, messages, Number.POSITIVE_INFINITY, headers);
          await confirm.close();
          await admin.purgeQueue(sink);
          return ms;
        };
        const drain = async () => {
          await outbox.restore();
          const r = await drainAll(db, sql, transport, batchSize, lanes, walCompression);
          const [{ n } = { n: 0 }] = await db.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where published_at is null`;
          if (n !== 0 || r.published !== events) throw new Error(`drain left ${n} pending / published ${r.published}`);
          const routed = (await admin.checkQueue(sink)).messageCount;
          if (routed !== events) throw new Error(`the sink queue holds ${routed} messages, expected ${events}`);
          await admin.purgeQueue(sink);
          return r.ms;
        };
        if (n === 0) {
          warmUpRound = await warmUp(drain, bare, log, 'rabbitmq', events);
          continue;
        }
        const measured = await round(n, bare, drain, events);
        const r = { ...measured, bareNoHeadersEventsPerSec: rate(events, await bare(false)) };
        log(`rabbitmq round ${n}/${rounds} (${r.first} first): ours ${r.oursEventsPerSec}/s, bare confirm loop ${r.ceilingEventsPerSec}/s, ratio ${r.ratio} (bare loop without headers ${r.bareNoHeadersEventsPerSec}/s)`);
        results.push(r);
      }
    } finally {
      await sql.end();
      await outbox.close();
    }
    const m = summarize(results);
    return {
      ours: { eventsPerSec: m.ours, batchSize, lanes },
      ceiling: { eventsPerSec: m.ceiling, method: 'bare amqplib confirm channel: the same messages with the same headers, publish all (respecting backpressure), one waitForConfirms' },
      bareWithoutHeaders: { eventsPerSec: spread(results.map((r) => r.bareNoHeadersEventsPerSec ?? 0)), note: 'the bare loop without the retention headers our drain adds; not part of the ratio' },
      ratio: m.ratio.median,
      ratioSpread: m.ratio,
      perRound: results,
      warmUpRound,
      brokerVersion,
    };
  } finally {
    await transport.close();
    await admin.deleteQueue(sink).catch(() => {});
    await admin.deleteQueue(`${exchange}.dead-letter`).catch(() => {});
    await admin.deleteExchange(`${exchange}.dlx`).catch(() => {});
    await admin.deleteExchange(exchange).catch(() => {});
    await conn.close();
  }
}

async function postgresBus({ events, batchSize, lanes, walCompression, outbox: outboxKind, rounds }: DrainSetup, log: (l: string) => void) {
  const bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bench', max: 1 });
  const contenders: BusContender[] = [];
  try {
    await subscribeSink(bus.sql);
    const results: Round[] = [];
    let warmUpRound: WarmUpRound | undefined;
    const outbox = await pendingOutbox(events, outboxKind);
    const { db } = outbox;
    try {
      // Each contender in a process of its own, kept for every round (bus-contender.ts): our
      // drain with its pool and transport, the bare INSERT with its session and its messages.
      const ours = await startBusContender({ kind: 'ours', outboxUrl: db.url, busUrl: bus.url, batchSize, lanes, walCompression });
      contenders.push(ours);
      const ceiling = await startBusContender({ kind: 'bare', outboxUrl: db.url, pendingTable: 'bench_pending', busUrl: bus.url, batchSize });
      contenders.push(ceiling);
      // CPU ms per 1,000 events, rounded to 0.1.
      const per1000 = (ms: number) => Math.round((ms * 10_000) / events) / 10;
      /** Every event is on the bus once, then the bus is emptied for the next run. */
      const delivered = async (published: number) => {
        const [{ n } = { n: 0 }] = await bus.sql<{ n: number }[]>`select count(*)::int as n from bus_deliveries`;
        if (n !== events || published !== events) throw new Error(`bus holds ${n} deliveries after ${published} published, expected ${events}`);
        await bus.sql`truncate bus_delivery_counts, bus_deliveries`;
      };
      for (let n = 0; n <= rounds; n++) {
        let ceilingCpu: BareInsertCpu | undefined;
        let oursCpu: BusDrainCpu | undefined;
        const bare = async (headers = true) => {
          await settle(db);
          // The backends' CPU is read here; Node's is the contender process's own, over its run.
          const { value: r, backends, backendFaults } = await withCpu(bus.sql, [APPS.bare], () => ceiling.run({ headers }));
          if (headers && backends && backendFaults) {
            ceilingCpu = { session: per1000(backends[APPS.bare]!), node: per1000(r.nodeMs), total: per1000(backends[APPS.bare]! + r.nodeMs), backendPageFaults: per1000(backendFaults[APPS.bare]!), nodePageFaults: per1000(r.nodePageFaults) };
          }
          await delivered(r.published);
          return r.ms;
        };
        const drain = async () => {
          await outbox.restore();
          const { value: r, backends, backendFaults } = await withCpu(bus.sql, [APPS.outbox, APPS.bus], () => ours.run());
          if (backends && backendFaults) {
            const [o, b] = [backends[APPS.outbox]!, backends[APPS.bus]!];
            oursCpu = { outboxSessions: per1000(o), busSession: per1000(b), node: per1000(r.nodeMs), total: per1000(o + b + r.nodeMs), backendPageFaults: per1000(backendFaults[APPS.outbox]! + backendFaults[APPS.bus]!), nodePageFaults: per1000(r.nodePageFaults) };
          }
          const [{ pending } = { pending: 0 }] = await db.sql<{ pending: number }[]>`select count(*)::int as pending from event_outbox where published_at is null`;
          if (pending !== 0) throw new Error(`drain left ${pending} pending`);
          await delivered(r.published);
          return r.ms;
        };
        if (n === 0) {
          const w = await warmUp(drain, bare, log, 'postgres bus', events);
          warmUpRound = { ...w, ...(oursCpu && ceilingCpu ? { cpuMsPer1000Events: { ours: oursCpu, ceiling: ceilingCpu } } : {}) };
          if (oursCpu && ceilingCpu) log(`postgres bus warm-up round: CPU ms per 1,000 events: ours ${oursCpu.total}, bare ${ceilingCpu.total}; backend page faults per 1,000 events: ours ${oursCpu.backendPageFaults}, bare ${ceilingCpu.backendPageFaults}`);
          continue;
        }
        const measured = await round(n, bare, drain, events);
        const r: Round = { ...measured, bareNoHeadersEventsPerSec: rate(events, await bare(false)), ...(oursCpu && ceilingCpu ? { cpuMsPer1000Events: { ours: oursCpu, ceiling: ceilingCpu } } : {}) };
        const c = r.cpuMsPer1000Events;
        const cpu = c ? `; CPU ms per 1,000 events: ours ${c.ours.total} (Node ${c.ours.node}), bare ${c.ceiling.total} (Node ${c.ceiling.node}); page faults per 1,000 events: ours ${c.ours.backendPageFaults} in its backends and ${c.ours.nodePageFaults} in Node, bare ${c.ceiling.backendPageFaults} and ${c.ceiling.nodePageFaults}` : '';
        log(`postgres bus round ${n}/${rounds} (${r.first} first): ours ${r.oursEventsPerSec}/s, bare INSERT ${r.ceilingEventsPerSec}/s, ratio ${r.ratio} (bare INSERT with empty headers ${r.bareNoHeadersEventsPerSec}/s)${cpu}`);
        results.push(r);
      }
    } finally {
      for (const c of contenders) await c.close();
      await outbox.close();
    }
    const m = summarize(results);
    return {
      ours: { eventsPerSec: m.ours, batchSize, lanes, process: 'its own, kept for every round' },
      ceiling: { eventsPerSec: m.ceiling, method: `bare multi-row INSERT into bus_deliveries of the same rows (headers included) in the statements our publishes send (each ${batchSize} messages split at ${PUBLISH_STATEMENT_BYTES} bytes of bodies), in a process of its own kept for every round` },
      bareWithoutHeaders: { eventsPerSec: spread(results.map((r) => r.bareNoHeadersEventsPerSec ?? 0)), note: "the bare INSERT with the column's default '{}' instead of the drain's headers; not part of the ratio" },
      ...(cpuSummary(results, m.ceiling.median) ?? {}),
      ratio: m.ratio.median,
      ratioSpread: m.ratio,
      perRound: results,
      warmUpRound,
    };
  } finally {
    await bus.drop();
  }
}

/**
 * Medians over rounds of where each bus contender's CPU went, ms per 1,000 events, and the rate
 * that bounds ours to: with every core busy on our drain alone, `cores` × 1,000 events per its
 * CPU ms per 1,000 (ADR-077). Undefined unless every round could read its backends' CPU.
 */
function cpuSummary(rounds: readonly Round[], ceilingEventsPerSec: number) {
  const cpu = rounds.map((r) => r.cpuMsPer1000Events);
  if (cpu.length === 0 || cpu.some((c) => c === undefined)) return undefined;
  const all = cpu as ReadonlyArray<NonNullable<Round['cpuMsPer1000Events']>>;
  const median = (pick: (c: (typeof all)[number]) => number) => spread(all.map(pick)).median;
  const cores = cpus().length;
  // Every core busy with our drain alone, at its CPU cost per event: a bound no scheduling beats.
  const boundEventsPerSec = Math.round((cores * 1_000_000) / median((c) => c.ours.total));
  return {
    cpuBound: {
      cores,
      oursEventsPerSec: boundEventsPerSec,
      ratio: ratio(boundEventsPerSec, ceilingEventsPerSec),
      note: "the most our drain could reach with every core busy on it alone at its median CPU per event, and that against the bare INSERT's median rate: what no pipelining can beat on this machine",
    },
    cpuMsPer1000Events: {
      ours: { outboxSessions: median((c) => c.ours.outboxSessions), busSession: median((c) => c.ours.busSession), node: median((c) => c.ours.node), total: median((c) => c.ours.total), backendPageFaults: median((c) => c.ours.backendPageFaults), nodePageFaults: median((c) => c.ours.nodePageFaults) },
      ceiling: { session: median((c) => c.ceiling.session), node: median((c) => c.ceiling.node), total: median((c) => c.ceiling.total), backendPageFaults: median((c) => c.ceiling.backendPageFaults), nodePageFaults: median((c) => c.ceiling.nodePageFaults) },
      note: "CPU (user + system) of each contender's processes while it ran, medians over rounds: our drain's outbox sessions (claim, stamp, commit), the bus transport's session (the INSERT) and Node; the bare INSERT's session and Node. backendPageFaults: the minor page faults of those backends, a count (not ms) per 1,000 events (ADR-074); nodePageFaults: those of the contender's own process (ADR-084). Read from /proc, so only where PostgreSQL runs on this host. Each contender runs in a process of its own, kept for every round (ADR-084)",
    },
  };
}

export const drainSuite: BenchSuite = {
  name: 'drain',
  summary: 'outbox drain to RabbitMQ vs a bare confirm-channel loop, and to the PostgreSQL bus vs a bare INSERT',
  options: ['events', 'batch', 'lanes', 'transport', 'rounds', 'wal-compression', 'outbox'],
  async run(ctx, options) {
    const events = Number(options.get('events') ?? 100_000);
    // The worker's own default, which the bare INSERT's statements match row for row.
    const batchSize = Number(options.get('batch') ?? DEFAULT_DRAIN_BATCH);
    const lanes = Number(options.get('lanes') ?? 2);
    const rounds = roundsOption(options);
    const which = options.get('transport') ?? 'both';
    if (!['both', 'rabbitmq', 'postgres'].includes(which)) throw new UsageError('--transport must be rabbitmq, postgres or both');
    for (const [name, n] of [['events', events], ['batch', batchSize], ['lanes', lanes]] as const) {
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer: ${n}`);
    }
    // Our drain's transactions' wal_compression (ADR-086): its default, lz4; off for the server's.
    const { text: walOption, method: walCompression } = walCompressionOption(options);
    // ADR-087's HOT outbox ceiling instead of the shipped outbox: a measurement, with no target.
    const outbox = outboxOption(options);
    const record = runRecord('drain', options, rounds);
    const log = (line: string) => writeLine(ctx.stderr, `[bench drain] ${line}`);
    if (outbox !== 'shipped') log(`outbox: ${outbox} (ADR-087), not the shipped outbox: the ratios below are no verdict on the targets`);
    const setup: DrainSetup = { events, batchSize, lanes, walCompression, outbox, rounds };
    const r = which !== 'postgres' ? await rabbit(setup, log) : undefined;
    const p = which !== 'rabbitmq' ? await postgresBus(setup, log) : undefined;
    const result = {
      ...record.finish(await machineInfo(r ? { rabbitmq: r.brokerVersion } : {})),
      events,
      walCompression: walOption,
      outbox,
      ...(r ? { ratio: r.ratio, rabbitmq: r } : {}),
      ...(p ? { postgresBus: p } : {}),
      targets: { rabbitmq: 0.85, postgresBus: 0.8 },
    };
    const cell = (x: { median: number; q1: number; q3: number }) => `${x.median} [${x.q1}–${x.q3}]`;
    printTable(
      ctx.stdout,
      ['run (median [IQR] over rounds)', 'events/s', 'ratio'],
      [
        ...(r ? [['rabbitmq: our drain', cell(r.ours.eventsPerSec), cell(r.ratioSpread)], ['rabbitmq: bare confirm-channel loop', cell(r.ceiling.eventsPerSec), ''], ['rabbitmq: the same, without the headers', cell(r.bareWithoutHeaders.eventsPerSec), '']] : []),
        ...(p ? [['postgres bus: our drain', cell(p.ours.eventsPerSec), cell(p.ratioSpread)], ['postgres bus: bare multi-row INSERT', cell(p.ceiling.eventsPerSec), ''], ['postgres bus: the same, empty headers', cell(p.bareWithoutHeaders.eventsPerSec), '']] : []),
      ],
    );
    const verdict = (target: number) => (outbox === 'shipped' ? `target >= ${target}` : `${outbox} outbox: no target`);
    if (r) writeLine(ctx.stdout, `\nratio ours/ceiling (RabbitMQ): ${r.ratio} (${verdict(0.85)})`);
    if (p) writeLine(ctx.stdout, `ratio ours/ceiling (PostgreSQL bus): ${p.ratio} (${verdict(0.8)})`);
    if (p?.cpuMsPer1000Events) {
      const { ours, ceiling } = p.cpuMsPer1000Events;
      writeLine(ctx.stdout, `  CPU ms per 1,000 events (medians): our drain ${ours.total} (outbox sessions ${ours.outboxSessions}, bus session ${ours.busSession}, Node ${ours.node}); bare INSERT ${ceiling.total} (its session ${ceiling.session}, Node ${ceiling.node})`);
      writeLine(ctx.stdout, `  backend page faults per 1,000 events (medians): our drain's ${ours.backendPageFaults}, the bare INSERT's ${ceiling.backendPageFaults}; each process's own: ${ours.nodePageFaults} and ${ceiling.nodePageFaults}`);
      if (p.cpuBound) writeLine(ctx.stdout, `  at that CPU cost, ${p.cpuBound.cores} cores busy on our drain alone give at most ${p.cpuBound.oursEventsPerSec} events/s: ${p.cpuBound.ratio} of the bare INSERT`);
    }
    writeLine(ctx.stdout, `load average before ${result.load.before.join(' ')}, after ${result.load.after.join(' ')}; ${result.wallSeconds} s`);
    for (const w of result.warnings) writeLine(ctx.stderr, `[bench drain] WARNING: ${w}`);
    writeLine(ctx.stdout, `wrote ${await writeResult(ctx.root, 'drain', result)}`);
  },
};
