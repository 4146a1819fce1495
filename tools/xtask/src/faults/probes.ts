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
 * sweep deleted exactly the eligible rows and never a pending one. Table and column names are
 * the scenario's own constants, checked here.
 */
export async function auditDeletes(sql: Sql, table: string, columns: readonly string[]): Promise<void> {
  for (const name of [table, ...columns]) if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new TypeError(`not a plain identifier: ${name}`);
  const audit = `fault_deleted_${table}`;
  const cols = columns.join(', ');
  await sql.unsafe(`
    create table ${audit} as select ${cols}, 0::bigint as xid from ${table} where false;
    -- SECURITY DEFINER: the services delete as their runtime roles, which may not write here.
    create function ${audit}_record() returns trigger language plpgsql security definer set search_path = public, pg_temp as $$
    begin
      insert into ${audit} (${cols}, xid) select ${columns.map((c) => `o.${c}`).join(', ')}, txid_current() from old_rows o;
      return null;
    end $$;
    create trigger ${audit} after delete on ${table} referencing old table as old_rows for each statement execute function ${audit}_record();`);
}

/** Owner-side count helper: `select count(*) from <table> where <predicate>` (constants only). */
export async function count(sql: Sql, table: string, where = 'true'): Promise<number> {
  const [row] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table} where ${where}`);
  return row!.n;
}
