// One PostgreSQL bus contender of `bench drain`, in a process of its own (see bus-contender.ts).
// Argument: a JSON `BusContenderSpec`. Prints `ready` once connected (and, for the bare INSERT,
// once it has encoded its messages); then, for each `run` line on stdin, runs once and prints one
// JSON line: its wall time, this process's CPU over it, and how many events it published. Exits
// when stdin ends.
import { createInterface } from 'node:readline';
import { createClient } from '@craig/db';
import { createPostgresBusTransport, OutboxWorker, publishStatements } from '@craig/mq';
import { Registry } from 'prom-client';
import { APPS, HEADERS, messagesOf, RETENTION, SINK, type BusContenderSpec, type ContenderRun, type Message } from './bus-contender.ts';

const spec = JSON.parse(process.argv[2] ?? '{}') as BusContenderSpec;

/** Run `work` and measure it: wall time, this process's CPU (every thread) and its minor page faults. */
async function measured(work: () => Promise<number>): Promise<ContenderRun> {
  const cpu = process.cpuUsage();
  const faults = process.resourceUsage().minorPageFault;
  const started = performance.now();
  const published = await work();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms, nodeMs: (used.user + used.system) / 1000, nodePageFaults: process.resourceUsage().minorPageFault - faults, published };
}

let run: (headers: boolean) => Promise<number>;
let close: () => Promise<void>;
if (spec.kind === 'ours') {
  // The outbox's pool and the transport live as long as the process, as a service's do.
  const sql = createClient(spec.outboxUrl, { service: APPS.outbox, max: spec.lanes + 1, idleTimeoutSeconds: 0 });
  const transport = await createPostgresBusTransport({ url: spec.busUrl, service: 'bench' });
  const worker = new OutboxWorker({ service: 'bench', sql, databaseUrl: spec.outboxUrl, transport, retention: RETENTION, maxAttempts: 10, registry: new Registry(), batchSize: spec.batchSize, drainLanes: spec.lanes, drainWalCompression: spec.walCompression });
  await sql`select 1`;
  run = async () => {
    const r = await worker.drain();
    if (r.unavailable > 0 || r.failed > 0 || r.parked > 0) throw new Error(`drain did not go cleanly: ${JSON.stringify(r)}`);
    return r.published;
  };
  close = async () => {
    await transport.close();
    await sql.end();
  };
} else {
  const outbox = createClient(spec.outboxUrl, { service: 'bench-insert-read', max: 1 });
  const messages = await messagesOf(outbox, spec.pendingTable);
  await outbox.end();
  // The statements our drain's publishes send, message for message: each claim of `batchSize`
  // messages split as the transport splits a publish (ADR-084). (The bench's claims are whole:
  // 4,000 of its ~600-byte events stay under the claim's 8 MiB bound.) With a claim's 4,000 rows in one
  // statement (~2.6 MB), this process and its backend gave their memory back to the kernel after
  // every statement and faulted it in again for the next: ~880 page faults per 1,000 events in
  // this process, its Node CPU 15–19 ms per 1,000 events instead of ~5. A ceiling that pays a
  // cost our drain does not is no ceiling.
  const statements: Message[][] = [];
  for (let i = 0; i < messages.length; i += spec.batchSize) {
    const claim = messages.slice(i, i + spec.batchSize);
    statements.push(...publishStatements(claim, claim.map((m) => Buffer.byteLength(m.body))));
  }
  // One session for the process's life: a new one per run would plan its first INSERTs cold (ADR-071).
  const sql = createClient(spec.busUrl, { service: APPS.bare, max: 1 });
  await sql`select 1`;
  run = async (headers) => {
    for (const part of statements) {
      // The very rows our publish writes: the drain's headers included, as a JSON object (the
      // driver serializes a jsonb parameter with JSON.stringify, so their JSON text would be
      // stored as a JSON string).
      const rows = part.map((m) => ({ consumer: SINK, event_id: m.eventId, routing_key: m.routingKey, body: m.body, headers: headers ? HEADERS : {} }));
      await sql`insert into bus_deliveries ${sql(rows, 'consumer', 'event_id', 'routing_key', 'body', 'headers')}`;
    }
    return messages.length;
  };
  close = () => sql.end();
}

process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  let answer: ContenderRun | { error: string };
  try {
    if (line !== 'run' && line !== 'run no-headers') throw new Error(`unknown command ${JSON.stringify(line)} (run, run no-headers)`);
    answer = await measured(() => run(line === 'run'));
  } catch (error) {
    answer = { error: error instanceof Error ? error.message : String(error) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
await close();
