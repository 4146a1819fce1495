// What the scenarios read from the databases from outside: who holds an advisory lock, which
// backend waits on a lock, and an audit of every row a sweep deleted (a trigger the scenario
// installs in its own scratch database, never part of a service's schema).
import type { Sql } from '@craig/db';

/** Sessions of this database holding the session advisory lock `key` (pg_locks). */
export async function advisoryHolders(sql: Sql, key: bigint): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks
    where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())
      and ((classid::bigint << 32) | objid::bigint) = ${key.toString()}::bigint and objsubid = 1`;
  return row!.n;
}

/** Backends of this database whose application_name starts with `prefix` and that wait on a lock. */
export async function waitingOnLock(sql: Sql, prefix: string): Promise<Array<{ pid: number; application: string; query: string }>> {
  return sql<{ pid: number; application: string; query: string }[]>`
    select pid, application_name as application, left(query, 200) as query from pg_stat_activity
    where datname = current_database() and starts_with(application_name, ${prefix}) and wait_event_type = 'Lock'`;
}

/** Backends of this database whose application_name starts with `prefix`. */
export async function backends(sql: Sql, prefix: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where datname = current_database() and starts_with(application_name, ${prefix})`;
  return row!.n;
}

/**
 * Record every row deleted from `table` into `fault_deleted_<table>` (the columns named, the
 * key among them), with the deleting transaction's id: what a scenario needs to prove that a
 * sweep deleted exactly the eligible rows and never a pending one. `computed` adds columns
 * evaluated as each deleted row is recorded, in the deleting transaction at the end of its
 * DELETE statement: SQL expressions over the deleted row `o` (state that lives in another table,
 * such as whether an outbox row was still queued, see OUTBOX_QUEUED_AT_DELETE). Table and column
 * names are the scenario's own constants, checked here.
 */
export async function auditDeletes(sql: Sql, table: string, columns: readonly string[], computed: Readonly<Record<string, string>> = {}): Promise<void> {
  for (const name of [table, ...columns, ...Object.keys(computed)]) if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new TypeError(`not a plain identifier: ${name}`);
  const audit = `fault_deleted_${table}`;
  const names = [...columns, ...Object.keys(computed)];
  const values = [...columns.map((c) => `o.${c}`), ...Object.entries(computed).map(([name, expr]) => `(${expr}) as ${name}`)].join(', ');
  await sql.unsafe(`
    create table ${audit} as select ${values}, 0::bigint as xid from ${table} o where false;
    -- SECURITY DEFINER: the services delete as their runtime roles, which may not write here (or read what a computed column reads).
    create function ${audit}_record() returns trigger language plpgsql security definer set search_path = public, pg_temp as $$
    begin
      insert into ${audit} (${names.join(', ')}, xid) select ${values}, txid_current() from old_rows o;
      return null;
    end $$;
    create trigger ${audit} after delete on ${table} referencing old table as old_rows for each statement execute function ${audit}_record();`);
}

/**
 * The outbox's delivery state (ADR-078, packages/mq/sql/000006_outbox_queue.sql), as predicates
 * on `event_outbox` for `count(sql, 'event_outbox', …)`: a row is PENDING while its id is in
 * `event_outbox_queue`, PARKED while `parked_at` is set, and PUBLISHED otherwise.
 */
export const OUTBOX_PENDING = 'exists (select 1 from event_outbox_queue q where q.id = event_outbox.id)';
export const OUTBOX_PUBLISHED = `(event_outbox.parked_at is null and not ${OUTBOX_PENDING})`;
/** Not (yet) published: pending or parked. */
export const OUTBOX_UNPUBLISHED = `(event_outbox.parked_at is not null or ${OUTBOX_PENDING})`;

/**
 * For `auditDeletes(sql, 'event_outbox', [...], { pending: OUTBOX_QUEUED_AT_DELETE })`: whether
 * the deleted row `o` was still pending (its id in the queue) when it was deleted. Only the
 * drain takes an id out of the queue, so a pending row deleted by mistake is still queued when
 * the deleting statement ends; a published row is never queued again by anything that runs
 * while the sweep holds its lock.
 */
export const OUTBOX_QUEUED_AT_DELETE = 'exists (select 1 from event_outbox_queue q where q.id = o.id)';

/**
 * Mark the outbox rows with ids `lo`..`hi` published, as the drain does once the transport
 * confirmed them: their ids leave the pending queue. A seed inserts its "already published" rows
 * (the insert trigger queues them) and then calls this in a statement of its own, with the range
 * its insert returned (`with ins as (insert … returning id) select min(id)::text as lo, max(id)::text as hi from ins`).
 * Throws unless exactly `expected` ids left the queue (nothing else may be inserted meanwhile).
 */
export async function markPublished(sql: Sql, range: { readonly lo: string | null; readonly hi: string | null }, expected: number): Promise<void> {
  const done = range.lo === null || range.hi === null ? [] : await sql`delete from event_outbox_queue where id between ${range.lo}::bigint and ${range.hi}::bigint returning id`;
  if (done.length !== expected) throw new Error(`markPublished: ${done.length} outbox rows left the pending queue, expected ${expected} (ids ${range.lo}..${range.hi})`);
}

/** Owner-side count helper: `select count(*) from <table> where <predicate>` (constants only). */
export async function count(sql: Sql, table: string, where = 'true'): Promise<number> {
  const [row] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table} where ${where}`);
  return row!.n;
}
