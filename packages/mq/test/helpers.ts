import { migrationTemplate, type Sql } from '@craig/db';
import { testDatabase } from '@craig/testkit';
import { BUS_MIGRATIONS, MQ_MIGRATIONS } from '../src/migrations.ts';

/** A fresh service database with the mq set applied. */
export const serviceDatabase = (max = 3) => testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: 'craig_mq', max });

/** A fresh bus database. */
export const busDatabase = (max = 2) => testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bus', max });

/** Make a bus database refuse every message routed `poison.*` (a per-message failure, not an outage). */
export async function refusePoisonMessages(sql: Sql): Promise<void> {
  await sql`create function refuse_poison() returns trigger language plpgsql as $$
    begin if new.routing_key like 'poison.%' then raise exception 'poison message refused'; end if; return new; end $$`;
  await sql`create trigger refuse_poison before insert on bus_deliveries for each row execute function refuse_poison()`;
}

export interface SeedOutbox {
  readonly n: number;
  /** created_at = now() - ageDays (plus a second per row, so rows are ordered). */
  readonly ageDays: number;
  readonly published?: boolean;
  readonly parked?: boolean;
  readonly eventType?: string;
}

/** Insert `n` outbox rows with explicit past timestamps. */
export async function seedOutbox(sql: Sql, opts: SeedOutbox): Promise<void> {
  await sql`
    insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at, parked_at, parked_reason)
    select gen_random_uuid(), 'case', g::text, ${opts.eventType ?? 'case.opened'}, jsonb_build_object('n', g),
           now() - ${opts.ageDays}::float8 * interval '1 day' + make_interval(secs => g),
           case when ${opts.published ?? false} then now() - ${opts.ageDays}::float8 * interval '1 day' + make_interval(secs => g + 1) end,
           case when ${opts.parked ?? false} then now() end,
           case when ${opts.parked ?? false} then 'max_attempts' end
    from generate_series(1, ${opts.n}) g`;
}

/** Insert `n` inbox records received `ageDays` ago. */
export async function seedInbox(sql: Sql, n: number, ageDays: number, consumer = 'c'): Promise<void> {
  await sql`
    insert into event_inbox (consumer, event_id, event_type, received_at)
    select ${consumer}, gen_random_uuid(), 'case.opened', now() - ${ageDays}::float8 * interval '1 day' + make_interval(secs => g)
    from generate_series(1, ${n}) g`;
}

export async function counts(sql: Sql): Promise<{ outbox: number; inbox: number }> {
  const [row] = await sql<{ outbox: number; inbox: number }[]>`
    select (select count(*) from event_outbox)::int as outbox, (select count(*) from event_inbox)::int as inbox`;
  return row!;
}

/**
 * Checkpoint, run `work`, and sum the full-page images the WAL holds for `table` since the
 * checkpoint (pg_walinspect, which the caller creates): every page `work` changes logs one. The
 * work may commit asynchronously: a synchronous commit after it flushes its records too.
 *
 * `bytesPerImage` is what compression changes. Compare that, not `fpi`: a checkpoint that another
 * test file asks for mid-run makes pages changed again log a second image, which adds to the
 * total whatever the images' size.
 */
export async function walImagesOf<T>(sql: Sql, table: string, work: () => Promise<T>): Promise<{ result: T; fpi: number; images: number; bytesPerImage: number; records: number }> {
  const [rel] = await sql<{ node: string; dboid: string }[]>`
    select pg_relation_filenode(${table})::text as node, (select oid from pg_database where datname = current_database())::text as dboid`;
  await sql`checkpoint`;
  const [start] = await sql<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  const result = await work();
  await sql`select pg_logical_emit_message(true, 'craig-test', 'flush')`;
  const [wal] = await sql<{ fpi: number; images: number; records: number }[]>`
    select coalesce(sum(fpi_length), 0)::int as fpi, count(*) filter (where fpi_length > 0)::int as images, count(*)::int as records
    from pg_get_wal_records_info(${start!.lsn}::pg_lsn, pg_current_wal_flush_lsn())
    where block_ref ~ ${`rel \\d+/${rel!.dboid}/${rel!.node} `}`;
  return { result, ...wal!, bytesPerImage: wal!.images > 0 ? wal!.fpi / wal!.images : 0 };
}
