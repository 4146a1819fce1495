import type { Sql } from 'postgres';
import { ArchiveSpecError } from '../errors.ts';
import { checkRegistration } from '../prune-gate.ts';
import type { ArchiveSpec } from '../spec.ts';

/** Key column types the engine handles (their text form is exact and their order is total). */
const KEY_TYPES: ReadonlySet<string> = new Set(['bigint', 'integer', 'smallint', 'uuid', 'text']);

/** Fields archive-fetch adds to every row. */
export const RESERVED_COLUMNS = ['_table', '_archive_id'] as const;

/** What the engine learned about a spec's table from the catalog at start. */
export interface TablePlan {
  readonly spec: ArchiveSpec;
  /** Every column in table order: the archived object's stable column order. */
  readonly columns: readonly string[];
  /** Each column's type as `format_type` prints it (a cast target: quoted where it must be). */
  readonly types: ReadonlyMap<string, string>;
}

interface ColumnRow {
  name: string;
  type: string;
}

/**
 * Check a spec against the database: the table and every named column exist, the key is
 * unique and of a supported type, the timestamp is `timestamptz`, every foreign key that
 * references the table has a guard (else the delete would meet dependents it does not expect),
 * and the prune gate's registration says what the spec says under this hot window.
 */
export async function planTable(sql: Sql, spec: ArchiveSpec, hotWindowDays: number): Promise<TablePlan> {
  const fail = (field: string, value: unknown, problem: string): never => {
    throw new ArchiveSpecError(spec.table, field, value, problem);
  };
  const [rel] = await sql<{ oid: string | null }[]>`select to_regclass(${spec.table})::oid::text as oid`;
  if (!rel?.oid) fail('table', spec.table, 'does not exist');
  const columns = await sql<ColumnRow[]>`
    select a.attname as name, format_type(a.atttypid, null) as type
    from pg_attribute a
    where a.attrelid = ${rel!.oid}::oid and a.attnum > 0 and not a.attisdropped
    order by a.attnum`;
  const typeOf = new Map(columns.map((c) => [c.name, c.type]));
  // archive-fetch adds these two fields to every row it writes out.
  for (const reserved of RESERVED_COLUMNS) if (typeOf.has(reserved)) fail('table', spec.table, `has a column named ${reserved}, which archive-fetch output reserves`);
  const need = (field: string, name: string) => {
    if (!typeOf.has(name)) fail(field, name, `is not a column of ${spec.table}`);
    return typeOf.get(name)!;
  };

  const keyType = need('keyColumn', spec.keyColumn);
  if (!KEY_TYPES.has(keyType)) fail('keyColumn', spec.keyColumn, `has type ${keyType}; supported key types: ${[...KEY_TYPES].join(', ')}`);
  const [unique] = await sql<{ ok: boolean }[]>`
    select exists (
      select 1 from pg_index i
      join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
      where i.indrelid = ${rel!.oid}::oid and i.indisunique and i.indnkeyatts = 1 and i.indpred is null
        and a.attname = ${spec.keyColumn}
    ) as ok`;
  if (!unique?.ok) fail('keyColumn', spec.keyColumn, 'must have a unique index of its own (the delete removes exactly the archived keys)');

  const tsType = need('timestampColumn', spec.timestampColumn);
  if (tsType !== 'timestamp with time zone') fail('timestampColumn', spec.timestampColumn, `has type ${tsType}; it must be timestamptz`);
  if (spec.fixpoint.kind !== 'insert_only') need('fixpoint.column', spec.fixpoint.column);
  if (spec.fixpoint.kind === 'terminal_quiescent') {
    const sinceType = need('fixpoint.since', spec.fixpoint.since);
    if (!['timestamp with time zone', 'date'].includes(sinceType)) fail('fixpoint.since', spec.fixpoint.since, `has type ${sinceType}; it must be timestamptz or date`);
  }
  for (const m of spec.mutableColumns) need('mutableColumns', m.column);

  for (const [i, g] of spec.guards.entries()) {
    const [dep] = await sql<{ ok: boolean }[]>`
      select exists (
        select 1 from pg_attribute a
        where a.attrelid = to_regclass(${g.table}) and a.attname = ${g.column} and not a.attisdropped
      ) as ok`;
    if (!dep?.ok) fail(`guards[${i}]`, `${g.table}.${g.column}`, 'is not a column of an existing table');
    need(`guards[${i}].references`, g.references ?? spec.keyColumn);
  }

  // Every single-column foreign key into this table must be guarded; a multi-column one
  // cannot be, so it is refused outright.
  const fks = await sql<{ table: string; columns: string[]; refs: string[] }[]>`
    select c.conrelid::regclass::text as table,
           array(select a.attname from unnest(c.conkey) k join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k) as columns,
           array(select a.attname from unnest(c.confkey) k join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k) as refs
    from pg_constraint c
    where c.contype = 'f' and c.confrelid = ${rel!.oid}::oid`;
  for (const fk of fks) {
    const guarded = fk.columns.length === 1 && spec.guards.some((g) => g.table === fk.table && g.column === fk.columns[0] && (g.references ?? spec.keyColumn) === fk.refs[0]);
    if (!guarded) {
      fail('guards', `${fk.table}(${fk.columns.join(', ')})`, `references ${spec.table}(${fk.refs.join(', ')}) but has no guard: add { table: '${fk.table}', column: '${fk.columns[0]}' } and archive ${fk.table} first`);
    }
  }

  await checkRegistration(sql, spec, hotWindowDays);
  return { spec, columns: columns.map((c) => c.name), types: typeOf };
}
