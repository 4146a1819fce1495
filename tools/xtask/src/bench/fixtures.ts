import { migrate, migrationTemplate, type Sql } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { sampleStats } from './measure.ts';
import { startWriter, type RemoteWriter } from './writer.ts';

/**
 * A fresh copy of an `event_outbox` of `rows` rows laid out like a real one: ids and
 * `created_at` rise together (an append-only table); the first 95 % span the year before the
 * 30-day window and every 19th of those is still pending (so 90 % aged published, 5 % aged
 * pending, interleaved), the last 5 % are fresh. ~312-byte payloads; UUIDv7 event ids, as
 * stageEvent makes them. Built once per size as a template (vacuumed and analyzed), then copied
 * with CREATE DATABASE … TEMPLATE, so every run starts from an identical table.
 */
export async function outboxCopy(rows: number, options: { pending?: 'aged' | 'all'; peer?: boolean } = {}): Promise<TestDatabase> {
  const allPending = options.pending === 'all';
  // The schema's own content hash: a new outbox migration builds a new template.
  const schema = (await migrationTemplate([MQ_MIGRATIONS])).id.slice(0, 8);
  return testDatabase({
    prefix: 'craig_bench',
    max: 2,
    template: {
      id: `bench${allPending ? 'pend' : options.peer ? 'peer' : 'out'}v4n${rows}s${schema}`,
      async build(url) {
        await migrate(url, [MQ_MIGRATIONS], { service: 'bench' });
        const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { statement_timeout: 0 } });
        try {
          // Event ids as stageEvent makes them (ADR-082): a UUIDv7 of the row's created_at
          // millisecond, its random bits from gen_random_uuid() (version and variant nibbles set).
          await sql`create function pg_temp.uuid_v7_at(t timestamptz) returns uuid language sql volatile as $$
            select (lpad(to_hex((extract(epoch from t) * 1000)::bigint), 12, '0') || '7' || substr(r, 14, 3) || substr(r, 17, 16))::uuid
            from (select replace(gen_random_uuid()::text, '-', '') as r) x $$`;
          const chunk = 250_000;
          for (let start = 1; start <= rows; start += chunk) {
            const end = Math.min(rows, start + chunk - 1);
            await sql`
              insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
              select pg_temp.uuid_v7_at(t.created_at), 'case', (g % 50000)::text, 'case.opened',
                     jsonb_build_object('caseId', g, 'status', 'opened', 'note', repeat('x', 262)),
                     t.created_at,
                     case when ${allPending} or (g <= ${Math.floor(rows * 0.95)} and g % 19 = 1) then null else t.created_at + interval '1 second' end
              from generate_series(${start}::int, ${end}::int) g,
                   lateral (select case when g <= ${Math.floor(rows * 0.95)}
                                        then now() - interval '396 days' + (interval '365 days') * (g::float8 / ${Math.floor(rows * 0.95)})
                                        else now() - interval '10 days' + (interval '10 days') * ((g - ${Math.floor(rows * 0.95)})::float8 / ${Math.ceil(rows * 0.05)}) - interval '1 minute'
                                   end as created_at) t`;
          }
          if (options.peer) await peerOutbox(sql);
          await sql`vacuum (analyze) event_outbox`;
        } finally {
          await sql.end();
        }
      },
    },
  });
}

/**
 * Read the whole table once so both contenders start with the same (warm) cache, after a
 * checkpoint: copying the template wrote the whole database to WAL, and a checkpoint forced by
 * that in the middle of one contender's run would be charged to it alone.
 */
export async function warm(sql: Sql, table = 'event_outbox'): Promise<void> {
  await sql`checkpoint`.catch(() => undefined);
  await sql`select count(*) from ${sql(table)}`;
  if (table === 'event_outbox') await sql`select count(*) from event_outbox where published_at is not null and created_at < now()`;
}

/** The server's WAL insert position, in bytes: the WAL written between two readings is their difference. */
export async function walPosition(sql: Sql): Promise<number> {
  const [row] = await sql<{ bytes: string }[]>`select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text as bytes`;
  return Number(row!.bytes);
}

/**
 * The same rows in `pg-transactional-outbox`'s own table (`public.outbox`, created by its
 * `DatabaseSetup` with its polling indexes): message id = event id, `processed_at` =
 * `published_at`, everything else as it is. The peer suite cleans it through that library.
 */
async function peerOutbox(sql: postgres.Sql): Promise<void> {
  const { DatabaseSetup } = await import('pg-transactional-outbox');
  const config = { outboxOrInbox: 'outbox' as const, database: 'bench', schema: 'public', table: 'outbox', listenerRole: 'bench', nextMessagesName: 'next_outbox_messages' };
  await sql.unsafe(DatabaseSetup.dropAndCreateTable(config));
  await sql.unsafe(DatabaseSetup.setupPollingIndexes(config));
  await sql`
    insert into outbox (id, aggregate_type, aggregate_id, message_type, payload, created_at, processed_at)
    select event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at from event_outbox order by id`;
  await sql`vacuum (analyze) outbox`;
}

/**
 * A single-row writer beside a cleanup of `table` (our `event_outbox`, or a peer's table of the
 * same shape): each call is one autocommit INSERT, 5 ms apart, in a process of its own (writer.ts).
 */
export function outboxWriter(url: string, table = 'event_outbox') {
  let writer: RemoteWriter | undefined;
  return {
    /** Resolves once the writer's process is connected, warm and writing. */
    start: async () => {
      writer = await startWriter({ kind: 'outbox', url, table });
    },
    /** Ends the writer: its statistics, and its successful samples' latencies (ms, in the order they ran) for a p99 pooled over rounds. */
    stop: async () => {
      if (!writer) throw new Error('the writer was not started');
      const samples = await writer.stop();
      return { stats: sampleStats(samples), samplesMs: samples.filter((s) => !s.failure).map((s) => s.ms) };
    },
  };
}
