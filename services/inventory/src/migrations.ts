import { cleanupMigrations, guardedMigrationSet, type CleanupInstallOptions } from '@craig/cleanup';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';

/** Where the service's own set (`inventory`) lives. */
export const INVENTORY_MIGRATIONS_DIRECTORY = new URL('../sql/', import.meta.url);

/**
 * The inventory database's sets, in order: `mq` (outbox and inbox, as every service), `cleanup`
 * (source tables, admission, jobs, runtime role), then the service's own `inventory`
 * (classification history, the runtime role's event grants). The guarded sets' preflight runs
 * before any file of any set, so nothing at all is applied unless the database is on
 * `CLEANUP_ALLOWED_DATABASES`.
 */
export function inventoryMigrationSets(options: CleanupInstallOptions): MigrationSet[] {
  return [MQ_MIGRATIONS, cleanupMigrations(options), guardedMigrationSet({ name: 'inventory', directory: INVENTORY_MIGRATIONS_DIRECTORY, runtimeGrants: INVENTORY_RUNTIME_GRANTS }, options)];
}

/**
 * Classification history is appended to and read; its rows go only with their item, by the
 * cascade of a cleanup step (which runs as the owner). The `inventory` set's 000002 grants to
 * `craig_inventory_runtime` predate per-set grants: applying these revokes the rest.
 */
export const INVENTORY_RUNTIME_GRANTS = defineRuntimeGrants({ tables: { item_classifications: ['select', 'insert'] } });
