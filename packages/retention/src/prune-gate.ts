// The owner's half of the prune gate (sql/000002_prune_gate.sql, docs/adr/063-runtime-roles.md):
// which tables `archive_prune_batch` may delete from, and by what policy. Written by the
// migration login from the service's specs and hot window after every migration run, so a
// runtime role can neither prune an unregistered table nor loosen a registered one; read back
// by the engine's check, so a drifted registration stops the boot instead of rolling back
// every batch.
import type { MigrationHook, Sql } from '@craig/db';
import { createHash } from 'node:crypto';
import { ArchiveSpecError } from './errors.ts';
import type { ArchiveSpec } from './spec.ts';

/** A spec as the gate stores it: the eligibility predicate's parts and the hot-window floor. */
export interface ArchiveRegistration {
  readonly table: string;
  readonly keyColumn: string;
  readonly timestampColumn: string;
  readonly hotWindowDays: number;
  readonly fixpoint: Readonly<Record<string, unknown>>;
  readonly guards: ReadonlyArray<{ readonly table: string; readonly column: string; readonly references: string }>;
}

/** The registration of `spec` under the service's hot window (a spec may only lengthen it). */
export function registrationOf(spec: ArchiveSpec, hotWindowDays: number): ArchiveRegistration {
  const fp = spec.fixpoint;
  return {
    table: spec.table,
    keyColumn: spec.keyColumn,
    timestampColumn: spec.timestampColumn,
    hotWindowDays: Math.max(hotWindowDays, spec.hotWindowDays ?? 0),
    fixpoint:
      fp.kind === 'insert_only'
        ? { kind: fp.kind }
        : fp.kind === 'terminal_status'
          ? { kind: fp.kind, column: fp.column, values: [...fp.values] }
          : { kind: fp.kind, column: fp.column, values: [...fp.values], since: fp.since, months: fp.months },
    guards: spec.guards.map((g) => ({ table: g.table, column: g.column, references: g.references ?? spec.keyColumn })),
  };
}

/**
 * Make `archive_tables` say exactly `specs` under `hotWindowDays`: upsert each, remove any
 * other table (the owner decides what may be pruned). Run as the owner, in a transaction.
 */
export async function registerArchiveSpecs(sql: Sql, specs: readonly ArchiveSpec[], hotWindowDays: number): Promise<void> {
  if (!Number.isInteger(hotWindowDays) || hotWindowDays < 1) throw new RangeError(`hotWindowDays must be a whole number ≥ 1: ${hotWindowDays}`);
  const rows = specs.map((s) => registrationOf(s, hotWindowDays));
  await sql`delete from archive_tables where table_name <> all(${rows.map((r) => r.table)}::text[])`;
  for (const r of rows) {
    await sql`
      insert into archive_tables (table_name, key_column, timestamp_column, hot_window_days, fixpoint, guards)
      values (${r.table}, ${r.keyColumn}, ${r.timestampColumn}, ${r.hotWindowDays}, ${sql.json(r.fixpoint as never)}, ${sql.json(r.guards)})
      on conflict (table_name) do update
      set key_column = excluded.key_column, timestamp_column = excluded.timestamp_column, hot_window_days = excluded.hot_window_days,
          fixpoint = excluded.fixpoint, guards = excluded.guards, registered_at = now()
      where (archive_tables.key_column, archive_tables.timestamp_column, archive_tables.hot_window_days, archive_tables.fixpoint, archive_tables.guards)
            is distinct from (excluded.key_column, excluded.timestamp_column, excluded.hot_window_days, excluded.fixpoint, excluded.guards)`;
  }
}

/**
 * The after-migrate step of an archiving service's own migration set: register its specs under
 * its configured hot window (`{ ...SET, afterMigrate: archiveRegistration(SPECS, hotWindowDays) }`).
 */
export function archiveRegistration(specs: readonly ArchiveSpec[], hotWindowDays: number): MigrationHook {
  const digest = createHash('sha256').update(JSON.stringify(specs.map((s) => registrationOf(s, hotWindowDays)))).digest('hex').slice(0, 16);
  return Object.freeze({ id: `archive_tables:${digest}`, run: ({ sql }: { sql: Sql }) => registerArchiveSpecs(sql, specs, hotWindowDays) });
}

interface RegistryRow {
  key_column: string;
  timestamp_column: string;
  hot_window_days: number;
  fixpoint: Record<string, unknown>;
  guards: unknown[];
}

/**
 * Refuse a spec the gate would prune differently: not registered, registered with another
 * predicate, or with a floor above the engine's hot window (its batches would all roll back).
 */
export async function checkRegistration(sql: Sql, spec: ArchiveSpec, hotWindowDays: number): Promise<void> {
  const want = registrationOf(spec, hotWindowDays);
  const [row] = await sql<RegistryRow[]>`
    select key_column, timestamp_column, hot_window_days, fixpoint, guards from archive_tables where table_name = ${spec.table}`;
  const fix = 'run the service\'s migrations with its settings (boot, or `pnpm xtask migrate <service>`)';
  if (!row) throw new ArchiveSpecError(spec.table, 'registration', undefined, `is missing from archive_tables, so archive_prune_batch refuses to prune the table: ${fix}`);
  const have = { keyColumn: row.key_column, timestampColumn: row.timestamp_column, fixpoint: row.fixpoint, guards: row.guards };
  const expected = { keyColumn: want.keyColumn, timestampColumn: want.timestampColumn, fixpoint: want.fixpoint, guards: want.guards };
  if (canonical(have) !== canonical(expected)) {
    throw new ArchiveSpecError(spec.table, 'registration', have, `differs from the engine's spec ${canonical(expected)}: ${fix}`);
  }
  if (row.hot_window_days > want.hotWindowDays) {
    throw new ArchiveSpecError(spec.table, 'registration.hotWindowDays', row.hot_window_days, `is above the engine's hot window of ${want.hotWindowDays} days, so every batch would roll back: ${fix}`);
  }
}

/** JSON with object keys sorted, so jsonb's key order cannot make equal values differ. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
