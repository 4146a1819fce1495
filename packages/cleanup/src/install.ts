import type { MigrationSet } from '@craig/db';
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
 * The `cleanup` migration set: the inventory source tables (servers → libraries → items), the
 * admission triggers and parent guards, the job/manifest/step tables and the runtime role's
 * grants. It installs only into allow-listed databases (`CLEANUP_ALLOWED_DATABASES`).
 */
export function cleanupMigrations(options: CleanupInstallOptions): MigrationSet {
  return guardedMigrationSet({ name: 'cleanup', directory: CLEANUP_MIGRATIONS_DIRECTORY }, options);
}
