// The PostgreSQL bus's two contenders each run in a child process of their own
// (bus-contender-main.ts), kept for every round, as a service keeps its process: each one's Node
// CPU and page faults are its own, with neither the other's heap, garbage and collector threads
// nor the benchmark's fixture beside it. (The bare INSERT's Node cost had varied twofold between
// runs, 9.4 to 21.2 CPU ms per 1,000 events; the cause turned out to be its statements' size,
// not the process it ran in: ADR-084.)
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Sql, WalCompressionMethod } from '@craig/db';
import { encodeEnvelope, retentionHeaders } from '@craig/mq';

export interface Message {
  readonly eventId: string;
  readonly routingKey: string;
  readonly body: string;
}

/** The drain's windows; every message it publishes carries them as headers (the dedup-horizon check, ADR-057). */
export const RETENTION = { outboxDays: 30, inboxDays: 31 } as const;
/** The headers our drain puts on every message: the bare baselines send the same ones, so both put the same bytes on the wire. */
export const HEADERS = retentionHeaders(RETENTION);
export const HEADERS_JSON = JSON.stringify(HEADERS);

/** `application_name`s of the bus suite's sessions: our drain's outbox pool, the transport's publish session, the bare INSERT's. */
export const APPS = { outbox: 'bench-drain', bus: 'bench:bus', bare: 'bench-insert' } as const;

/** The bus's one consumer in `bench drain`: bound to '#', so every message becomes one delivery row (no consumer runs). */
export const SINK = 'sink';

/** Subscribe {@link SINK} to every routing key on the bus at `sql`, as the transport's `subscribe(['#'])` would. */
export async function subscribeSink(sql: Sql): Promise<void> {
  await sql`insert into bus_subscriptions (consumer, patterns, pattern_regex) values (${SINK}, '{#}', '^((\\.[^.]+)*)$')`;
}

/** The exact messages our drain publishes from `table` (a pending outbox's rows), encoded once, for the bare baselines. */
export async function messagesOf(sql: Sql, table = 'event_outbox'): Promise<Message[]> {
  const rows = await sql<{ event_id: string; aggregate_type: string; aggregate_id: string; event_type: string; payload: string; headers: string; created_at: Date }[]>`
    select event_id::text, aggregate_type, aggregate_id, event_type, payload::text as payload, headers::text as headers, created_at from ${sql(table)} order by id`;
  return rows.map((r) => ({
    eventId: r.event_id,
    routingKey: r.event_type,
    body: encodeEnvelope({ eventId: r.event_id, eventType: r.event_type, aggregateType: r.aggregate_type, aggregateId: r.aggregate_id, source: 'bench', occurredAt: r.created_at.toISOString(), headersJson: r.headers, payloadJson: r.payload }),
  }));
}

/** What a contender process runs, every time it is asked. */
export type BusContenderSpec =
  /** Our drain: `OutboxWorker.drain` from the outbox at `outboxUrl` into the bus at `busUrl`, on a pool and a transport kept for the process's life. */
  | { readonly kind: 'ours'; readonly outboxUrl: string; readonly busUrl: string; readonly batchSize: number; readonly lanes: number; readonly walCompression: WalCompressionMethod | false }
  /**
   * The bare multi-row INSERT of `pendingTable`'s messages (read once, at start) into the bus, in
   * the statements our drain's publishes send (each `batchSize` messages split at
   * `PUBLISH_STATEMENT_BYTES` of bodies), on one session kept for the process's life.
   */
  | { readonly kind: 'bare'; readonly outboxUrl: string; readonly pendingTable: string; readonly busUrl: string; readonly batchSize: number };

/** One run's outcome, as the child reports it. */
export interface ContenderRun {
  /** The run's wall time in the child, ms. */
  readonly ms: number;
  /** The child process's CPU over the run (user + system, every thread), ms. */
  readonly nodeMs: number;
  /** The child process's minor page faults over the run: first touches of memory it had not mapped (ADR-074). */
  readonly nodePageFaults: number;
  /** Events the run put on the bus. */
  readonly published: number;
}

export interface BusContender {
  /** The contender process's id. */
  readonly pid: number | undefined;
  /** Run once; `headers: false` (bare only) writes the column's default `'{}'` instead of the drain's headers. */
  run(options?: { headers?: boolean }): Promise<ContenderRun>;
  close(): Promise<void>;
}

const MAIN = fileURLToPath(new URL('./bus-contender-main.ts', import.meta.url));

/**
 * Start a contender process; resolves once it has connected and read what it needs. The protocol
 * is one line each way: `run` or `run no-headers` in, one JSON line out (a {@link ContenderRun},
 * or `{ error }`); stdin's end closes the process.
 */
export async function startBusContender(spec: BusContenderSpec): Promise<BusContender> {
  // CRAIG_BENCH_CPU_PROF=<dir>: each contender process writes its V8 CPU profile there, as the archive engine's does.
  const profile = process.env.CRAIG_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CRAIG_BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', MAIN, JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'inherit'] });
  // How the process ended, as text; it never rejects, so a spawn error that comes while nothing
  // awaits it is not an unhandled rejection (the next `run` or `close` reports it).
  const exited = new Promise<{ code: number | null; how: string }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, how: `could not run: ${error.message}` }));
    child.once('exit', (code, signal) => resolve({ code, how: signal ? `killed by ${signal}` : `exited ${code}` }));
  });
  // A write to a process that has died fails with EPIPE: `exited` reports the death itself.
  child.stdin.on('error', () => {});
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await Promise.race([lines.next(), exited.then(() => ({ done: true as const }))]);
    // Its output ends before its exit is reported: wait for that, to say how it ended.
    if (line.done) throw new Error(`the ${spec.kind} bus contender process ended before it answered (${(await exited).how})`);
    return line.value;
  };
  const ready = await next();
  if (ready !== 'ready') throw new Error(`the ${spec.kind} bus contender process said ${JSON.stringify(ready)} instead of ready`);
  return {
    pid: child.pid,
    async run(options = {}) {
      child.stdin.write(options.headers === false ? 'run no-headers\n' : 'run\n');
      const answer = JSON.parse(await next()) as ContenderRun | { error: string };
      if ('error' in answer) throw new Error(`the ${spec.kind} bus contender failed: ${answer.error}`);
      return answer;
    },
    async close() {
      child.stdin.end();
      const end = await exited;
      if (end.code !== 0) throw new Error(`the ${spec.kind} bus contender process ${end.how}`);
    },
  };
}
