import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { DatabaseNotAllowed } from './errors.ts';

/** The non-owner role the service's connections run as (created by the `cleanup` set; see README). */
export const RUNTIME_ROLE = 'craig_inventory_runtime';

/** Where the `cleanup` set's files live (`sql/` beside `src/` and `dist/`). */
export const CLEANUP_MIGRATIONS_DIRECTORY = new URL('../sql/', import.meta.url);

export interface CleanupInstallOptions {
  /** Database names the schema may be installed into; a trailing `*` matches any suffix. */
  readonly allowedDatabases: readonly string[];
}

/** Whether `database` is on the allow-list: an exact name, or a `prefix*` entry it starts with. */
export function isDatabaseAllowed(database: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => (entry.endsWith('*') ? database.startsWith(entry.slice(0, -1)) : database === entry));
}

/** Throws {@link DatabaseNotAllowed} unless `database` is on the allow-list. */
export function assertDatabaseAllowed(database: string, allowed: readonly string[]): void {
  if (!isDatabaseAllowed(database, allowed)) throw new DatabaseNotAllowed(database, allowed);
}

/**
 * An installer guard for any migration set: its preflight refuses a database that is not on
 * the allow-list, under the migrator lock and before any file of any set runs.
 */
export function guardedMigrationSet(set: Omit<MigrationSet, 'preflight'>, options: CleanupInstallOptions): MigrationSet {
  const allowed = Object.freeze([...options.allowedDatabases]);
  return Object.freeze({
    ...set,
    preflight: async ({ database }: { database: string }) => assertDatabaseAllowed(database, allowed),
  });
}

/**
 * What the runtime role may do with the `cleanup` set's objects (docs/adr/063-runtime-roles.md):
 * write the source graph through the admission triggers, never change an identity column, never
 * delete a source row (only `cleanup_step`, a SECURITY DEFINER function, does); drive jobs and
 * manifests; delete finished jobs' history (the history sweep).
 */
export const CLEANUP_RUNTIME_GRANTS = defineRuntimeGrants({
  tables: {
    servers: ['select', 'insert'],
    libraries: ['select', 'insert'],
    items: ['select', 'insert'],
    cleanup_jobs: ['select', 'insert', 'delete'],
    cleanup_manifest: ['select', 'insert', 'delete'],
    cleanup_steps: ['select', 'delete'],
  },
  updateColumns: {
    servers: ['name', 'admission', 'cleanup_job_id', 'updated_at'],
    libraries: ['name', 'admission', 'cleanup_job_id', 'updated_at'],
    items: ['library_id', 'title', 'updated_at'],
    // Counters, cursor progress and the step count move only inside cleanup_step.
    cleanup_jobs: ['state', 'phase', 'cancel_reason', 'expected_unique_count', 'high_water_id', 'cursor_library_id', 'cursor_item_id', 'sealed_at', 'finished_at', 'updated_at'],
  },
  functions: ['cleanup_step(bigint, integer, integer, integer)', 'cleanup_step_window(bigint, integer, integer, integer, integer, integer)'],
});

/**
 * The `cleanup` migration set: the inventory source tables (servers → libraries → items), the
 * admission triggers and parent guards, the job/manifest/step tables, the step function and
 * the runtime role's grants. It installs only into allow-listed databases
 * (`CLEANUP_ALLOWED_DATABASES`).
 */
export function cleanupMigrations(options: CleanupInstallOptions): MigrationSet {
  return guardedMigrationSet({ name: 'cleanup', directory: CLEANUP_MIGRATIONS_DIRECTORY, runtimeGrants: CLEANUP_RUNTIME_GRANTS }, options);
}
