// A benchmark's concurrent writer, in a process of its own: the service that shares the
// database with the prune or cleanup being measured. In the benchmark's process its latency
// would include the event loop's turns spent on the contender's own results (parsing a step
// window's JSON, a batch's bookkeeping), which no other service sees; here it includes only
// what the database and the machine do to it. Argument: a JSON `WriterSpec`. Prints `ready`
// once connected and warmed, then, when its stdin ends, one JSON line of samples whose `at` is
// absolute (performance.timeOrigin + performance.now()), so the parent can split them into its
// own windows.
import { createClient, uuidv7 } from '@craig/db';
import { TimedProbe } from './measure.ts';
import type { WriterSpec } from './writer.ts';

const spec = JSON.parse(process.argv[2] ?? '{}') as WriterSpec;
const code = (e: unknown) => (e as { code?: string }).code;
let probe: TimedProbe;
let end: () => Promise<void>;
if (spec.kind === 'outbox') {
  const sql = createClient(spec.url, { service: 'bench-writer', max: 1 });
  const table = spec.table ?? 'event_outbox';
  // Event ids as stageEvent makes them (UUIDv7, ADR-082), in either contender's table.
  const insert =
    table === 'event_outbox'
      ? () => sql`insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload) values (${uuidv7()}, 'case', 'w', 'case.opened', '{"w":1}')`
      : () => sql`insert into ${sql(table)} (id, aggregate_type, aggregate_id, message_type, payload) values (${uuidv7()}, 'case', 'w', 'case.opened', '{"w":1}')`;
  await sql`select 1`;
  probe = new TimedProbe(insert, { pauseMs: 5, classify: (e) => String(code(e) ?? 'error') });
  end = () => sql.end();
} else {
  const sql = createClient(spec.url, { service: 'bench-writer', max: 1, role: spec.role });
  let next = 0;
  const upsert = () => {
    const ids = Array.from({ length: spec.page }, () => `w-${(next++ % spec.items) + 1}`);
    return sql`
      insert into items (server_id, library_id, external_id, title)
      select ${spec.serverId}, ${spec.libraryId}, x, 'rev ' || ${next} from unnest(${ids}::text[]) as x
      on conflict (server_id, external_id) do update set title = excluded.title, updated_at = now()`;
  };
  await sql`select 1`;
  probe = new TimedProbe(upsert, { pauseMs: 2, classify: (e) => (code(e) === '55P03' ? 'nowait' : (code(e) ?? 'error')) });
  end = () => sql.end();
}
// Warm first (postgres.js's and V8's first runs of a statement are slow): a second of writes
// whose samples are dropped, so the first window measured is not the process's first second.
// A write in flight at `ready` began in the warm-up: it is dropped too (by its start, not by
// when it landed in the list).
probe.start();
await new Promise((r) => setTimeout(r, 1000));
const readyAt = performance.now();
process.stdout.write('ready\n');
process.stdin.resume();
await new Promise((r) => process.stdin.once('end', r));
await probe.stop();
await end();
const origin = performance.timeOrigin;
const measured = probe.samples.filter((s) => s.at >= readyAt);
process.stdout.write(`${JSON.stringify(measured.map((s) => ({ ...s, at: origin + s.at })))}\n`);
