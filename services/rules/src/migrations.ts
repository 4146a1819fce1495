import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { archiveRegistration, RETENTION_MIGRATIONS } from '@craig/retention';
import { RULES_ARCHIVE_SPECS } from './archive-specs.ts';

/** The service's own set (`rules`): snapshots, promotion previews, evaluations, and version 1 of `default`. */
export const RULES_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'rules',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Snapshots, previews and evaluations are insert-only (the triggers refuse changes for the
  // owner too); evaluations are deleted only through the prune gate (docs/security.md).
  runtimeGrants: defineRuntimeGrants({ tables: { rule_set_snapshots: ['select', 'insert'], rule_set_promotion_previews: ['select', 'insert'], rule_evaluations: ['select', 'insert'] } }),
});

/**
 * The rules database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger and the prune gate), then the service's own `rules`,
 * whose after-migrate step registers its archive specs with the prune gate under the
 * service's hot window (ARCHIVE_HOT_WINDOW_DAYS), so the gate prunes by exactly that policy.
 */
export function rulesMigrationSets(archive: { readonly hotWindowDays: number }): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, { ...RULES_MIGRATIONS, afterMigrate: archiveRegistration(RULES_ARCHIVE_SPECS, archive.hotWindowDays) }];
}
