import { cleanupMigrations, guardedMigrationSet, type CleanupInstallOptions } from '@craig/cleanup';
import type { MigrationSet } from '@craig/db';

/** Where the service's own set (`inventory`) lives. */
export const INVENTORY_MIGRATIONS_DIRECTORY = new URL('../sql/', import.meta.url);

/**
 * The inventory database's sets, in order: `cleanup` (source tables, admission, jobs, runtime
 * role), then the service's own `inventory` (classification history). Both carry the
 * installer guard: nothing is applied unless the database is on `CLEANUP_ALLOWED_DATABASES`.
 */
export function inventoryMigrationSets(options: CleanupInstallOptions): MigrationSet[] {
  return [cleanupMigrations(options), guardedMigrationSet({ name: 'inventory', directory: INVENTORY_MIGRATIONS_DIRECTORY }, options)];
}
