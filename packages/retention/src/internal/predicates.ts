// The eligibility predicate, built from a spec's fixed variants. Identifiers come from the
// validated spec (plain lower-case names, quoted by postgres.js); every value is a parameter,
// or, for the batch COPY (which takes none), a session setting the reader sets first (a
// {@link Binder}). The same builder serves the batch select, the overrun count and the
// writer-side refusal, so they can never drift apart.
import type { PendingQuery, Row, Sql } from 'postgres';
import type { ArchiveSpec, Fixpoint } from '../spec.ts';

type Fragment = PendingQuery<Row[]>;

/** The table alias every engine statement uses for the archived table. */
export const ALIAS = 't';

/** How a predicate refers to its values: bound parameters by default. */
export interface Binder {
  /** The values `column` is compared with (`= any(…)`): they take its type. */
  textArray(values: readonly string[], column: string): Fragment;
  int(value: number): Fragment;
}

export function paramBinder(sql: Sql): Binder {
  return { textArray: (values) => sql`${values as string[]}`, int: (value) => sql`${value}` };
}

function column(sql: Sql, qualifier: string | null, name: string): Fragment {
  return sql`${sql(qualifier ? `${qualifier}.${name}` : name)}`;
}

/** The fixpoint predicate; NULL for a row whose fixpoint columns are NULL. `qualifier` null: bare column names. */
export function fixpointSql(sql: Sql, fixpoint: Fixpoint, qualifier: string | null, bind: Binder = paramBinder(sql)): Fragment {
  switch (fixpoint.kind) {
    case 'insert_only':
      return sql`true`;
    case 'terminal_status':
      return sql`${column(sql, qualifier, fixpoint.column)} = any(${bind.textArray(fixpoint.values, fixpoint.column)})`;
    case 'terminal_quiescent':
      return sql`(${column(sql, qualifier, fixpoint.column)} = any(${bind.textArray(fixpoint.values, fixpoint.column)})
        and ${column(sql, qualifier, fixpoint.since)} < now() - make_interval(months => ${bind.int(fixpoint.months)}))`;
  }
}

/** Past the hot window, by the database's clock. */
export function hotWindowSql(sql: Sql, spec: ArchiveSpec, hotWindowDays: number, bind: Binder = paramBinder(sql)): Fragment {
  return sql`${column(sql, ALIAS, spec.timestampColumn)} < now() - make_interval(days => ${bind.int(hotWindowDays)})`;
}

/** No dependent row references this one (FK deletion order). */
export function guardsSql(sql: Sql, spec: ArchiveSpec): Fragment {
  if (spec.guards.length === 0) return sql`true`;
  return spec.guards
    .map((g) => sql`not exists (select 1 from ${sql(g.table)} as d where ${sql(`d.${g.column}`)} = ${column(sql, ALIAS, g.references ?? spec.keyColumn)})`)
    .reduce((acc, guard) => sql`${acc} and ${guard}`);
}

/** The whole eligibility predicate: evaluated by the select AND re-checked by the delete. */
export function eligibleSql(sql: Sql, spec: ArchiveSpec, hotWindowDays: number, bind: Binder = paramBinder(sql)): Fragment {
  return sql`(${fixpointSql(sql, spec.fixpoint, ALIAS, bind)}) and ${hotWindowSql(sql, spec, hotWindowDays, bind)} and ${guardsSql(sql, spec)}`;
}
