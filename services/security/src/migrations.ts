import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { archiveRegistration, RETENTION_MIGRATIONS } from '@craig/retention';
import { SECURITY_ARCHIVE_SPECS } from './archive-specs.ts';

/** The service's own set (`security`): `audit_log` and `dead_letter_audit`. */
export const SECURITY_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'security',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Insert-only audit: written by the consumers, read by the API, deleted only through the prune
  // gate (archive_prune_batch), never by the runtime role itself (docs/security.md).
  runtimeGrants: defineRuntimeGrants({ tables: { audit_log: ['select', 'insert'], dead_letter_audit: ['select', 'insert'] } }),
});

/**
 * The security database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger and the prune gate), then the service's own `security`,
 * whose after-migrate step registers its archive specs with the prune gate under the
 * service's hot window (ARCHIVE_HOT_WINDOW_DAYS), so the gate prunes by exactly that policy.
 */
export function securityMigrationSets(archive: { readonly hotWindowDays: number }): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, { ...SECURITY_MIGRATIONS, afterMigrate: archiveRegistration(SECURITY_ARCHIVE_SPECS, archive.hotWindowDays) }];
}
