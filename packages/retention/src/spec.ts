import { ArchiveSpecError } from './errors.ts';

/**
 * When a row has reached the state it will never leave: the closed set of predicates the
 * engine knows how to evaluate. Each is monotone by construction when its preconditions hold
 * (see the README): once true for a row, true forever.
 */
export type Fixpoint =
  /** The row never changes after insert: at its fixpoint from birth (audit logs). */
  | { readonly kind: 'insert_only' }
  /** `column` holds one of the terminal `values`, which no designed write path leaves. */
  | { readonly kind: 'terminal_status'; readonly column: string; readonly values: readonly string[] }
  /**
   * Terminal, AND `since` is older than `months` months (bound as a parameter, never a second
   * literal): for rows a freshness rule may still touch while they are recent.
   */
  | { readonly kind: 'terminal_quiescent'; readonly column: string; readonly values: readonly string[]; readonly since: string; readonly months: number };

/** Constructors for the fixpoint variants. */
export const fixpoints = Object.freeze({
  insertOnly: (): Fixpoint => ({ kind: 'insert_only' }),
  terminalStatus: (column: string, values: readonly string[]): Fixpoint => ({ kind: 'terminal_status', column, values: [...values] }),
  terminalQuiescent: (column: string, values: readonly string[], quiescence: { readonly since: string; readonly months: number }): Fixpoint => ({
    kind: 'terminal_quiescent',
    column,
    values: [...values],
    since: quiescence.since,
    months: quiescence.months,
  }),
});

/**
 * A table whose rows reference this one: a row is archived only when no dependent references
 * it (`NOT EXISTS`, in the select AND in the delete). Dependents are archived first, by an
 * earlier spec.
 */
export interface DependentGuard {
  readonly table: string;
  /** The dependent's referencing column. */
  readonly column: string;
  /** The referenced column of this table; the key column by default. */
  readonly references?: string;
}

/**
 * A column that may legitimately change while a row is otherwise terminal (precondition 4):
 * either the fixpoint predicate reads it, or a writer-side in-WHERE refusal (named here) keeps
 * writers off rows at their fixpoint. See {@link notAtFixpoint}.
 */
export type MutableColumn =
  | { readonly column: string; readonly protectedBy: 'fixpoint' }
  | { readonly column: string; readonly protectedBy: 'writer_refusal'; readonly refusal: string };

export interface ArchiveSpecInput {
  readonly table: string;
  /** Unique, indexed column the batches walk in order; `bigint`, `integer`, `smallint`, `uuid` or `text`. */
  readonly keyColumn: string;
  /** `timestamptz` column the hot window applies to. */
  readonly timestampColumn: string;
  readonly fixpoint: Fixpoint;
  readonly guards?: readonly DependentGuard[];
  /** Days this table stays hot; may only lengthen the engine's window. */
  readonly hotWindowDays?: number;
  /**
   * Most rows per archive object; default 25,000. The engine also bounds an object's size in
   * bytes (`maxObjectBytes`), so wide rows make smaller batches.
   */
  readonly batchSize?: number;
  /** Columns that may change on an otherwise terminal row, and what protects each. */
  readonly mutableColumns?: readonly MutableColumn[];
}

/** A validated, frozen spec. Build with {@link defineArchiveSpec}. */
export interface ArchiveSpec extends ArchiveSpecInput {
  readonly guards: readonly DependentGuard[];
  readonly batchSize: number;
  readonly mutableColumns: readonly MutableColumn[];
}

export const DEFAULT_ARCHIVE_BATCH = 25_000;
export const MAX_ARCHIVE_BATCH = 50_000;

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Validate a spec once, in code: identifiers are plain lower-case names (they become SQL
 * identifiers), values are checked, and every declared mutable column is protected. Whether
 * the tables and columns really exist is checked against the database when the engine starts.
 */
export function defineArchiveSpec(input: ArchiveSpecInput): ArchiveSpec {
  const table = input.table;
  const fail = (field: string, value: unknown, problem: string): never => {
    throw new ArchiveSpecError(typeof table === 'string' ? table : String(table), field, value, problem);
  };
  const identifier = (field: string, value: unknown) => {
    if (typeof value !== 'string' || !IDENTIFIER.test(value)) fail(field, value, 'must be a plain lower-case SQL identifier');
  };
  identifier('table', table);
  identifier('keyColumn', input.keyColumn);
  identifier('timestampColumn', input.timestampColumn);

  const fp = input.fixpoint;
  const fixpointColumns: string[] = [];
  switch (fp?.kind) {
    case 'insert_only':
      break;
    case 'terminal_status':
    case 'terminal_quiescent':
      identifier('fixpoint.column', fp.column);
      fixpointColumns.push(fp.column);
      if (!Array.isArray(fp.values) || fp.values.length === 0 || fp.values.some((v) => typeof v !== 'string' || v === '')) {
        fail('fixpoint.values', fp.values, 'must be a non-empty list of terminal values');
      }
      if (fp.kind === 'terminal_quiescent') {
        identifier('fixpoint.since', fp.since);
        fixpointColumns.push(fp.since);
        if (!Number.isInteger(fp.months) || fp.months < 1 || fp.months > 1200) fail('fixpoint.months', fp.months, 'must be a whole number of months, 1…1200');
      }
      break;
    default:
      fail('fixpoint.kind', (fp as { kind?: unknown } | undefined)?.kind, 'must be insert_only, terminal_status or terminal_quiescent');
  }

  const guards = [...(input.guards ?? [])];
  guards.forEach((g, i) => {
    identifier(`guards[${i}].table`, g.table);
    identifier(`guards[${i}].column`, g.column);
    if (g.references !== undefined) identifier(`guards[${i}].references`, g.references);
  });

  if (input.hotWindowDays !== undefined && (!Number.isInteger(input.hotWindowDays) || input.hotWindowDays < 1 || input.hotWindowDays > 36_500)) {
    fail('hotWindowDays', input.hotWindowDays, 'must be a whole number of days, 1…36500');
  }
  const batchSize = input.batchSize ?? DEFAULT_ARCHIVE_BATCH;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_ARCHIVE_BATCH) fail('batchSize', batchSize, `must be a whole number, 1…${MAX_ARCHIVE_BATCH}`);

  // Precondition 4: a column that may change on an otherwise terminal row must be read by the
  // fixpoint (so the delete's re-check sees the change) or kept off by a named writer-side
  // refusal. The key and the timestamp may not change at all: eligibility hangs on them.
  const mutableColumns = [...(input.mutableColumns ?? [])];
  const seen = new Set<string>();
  mutableColumns.forEach((m, i) => {
    identifier(`mutableColumns[${i}].column`, m.column);
    if (seen.has(m.column)) fail(`mutableColumns[${i}].column`, m.column, 'is declared twice');
    seen.add(m.column);
    if (m.column === input.keyColumn || m.column === input.timestampColumn) {
      fail(`mutableColumns[${i}].column`, m.column, 'is the key or timestamp column, which must never change once a row exists');
    }
    if (m.protectedBy === 'fixpoint') {
      if (!fixpointColumns.includes(m.column)) {
        fail(`mutableColumns[${i}].column`, m.column, `is not read by the ${fp.kind} fixpoint predicate: protect it with a named writer-side in-WHERE refusal (protectedBy: 'writer_refusal')`);
      }
    } else if (m.protectedBy === 'writer_refusal') {
      if (typeof m.refusal !== 'string' || m.refusal.trim() === '') fail(`mutableColumns[${i}].refusal`, m.refusal, 'must name the writer-side refusal that protects the column');
    } else {
      fail(`mutableColumns[${i}].protectedBy`, (m as { protectedBy?: unknown }).protectedBy, "must be 'fixpoint' or 'writer_refusal'");
    }
  });

  return Object.freeze({
    table,
    keyColumn: input.keyColumn,
    timestampColumn: input.timestampColumn,
    fixpoint: Object.freeze({ ...fp, ...('values' in fp ? { values: Object.freeze([...fp.values]) } : {}) }),
    guards: Object.freeze(guards.map((g) => Object.freeze({ ...g }))),
    ...(input.hotWindowDays !== undefined ? { hotWindowDays: input.hotWindowDays } : {}),
    batchSize,
    mutableColumns: Object.freeze(mutableColumns.map((m) => Object.freeze({ ...m }))),
  });
}

/**
 * Check a service's specs as a set: tables distinct, and FK deletion order: a table that guards
 * against a dependent archived by another spec must come after it (children before parents).
 */
export function checkSpecOrder(specs: readonly ArchiveSpec[]): void {
  const position = new Map<string, number>();
  specs.forEach((s, i) => {
    if (position.has(s.table)) throw new ArchiveSpecError(s.table, 'table', s.table, 'has two specs in one engine');
    position.set(s.table, i);
  });
  specs.forEach((s, i) => {
    for (const g of s.guards) {
      const j = position.get(g.table);
      if (j !== undefined && j > i && g.table !== s.table) {
        throw new ArchiveSpecError(s.table, 'guards', g.table, `is archived after ${s.table} (position ${j} > ${i}): specs must run in FK deletion order, dependents first`);
      }
    }
  });
}
