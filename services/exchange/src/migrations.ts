import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { archiveRegistration, RETENTION_MIGRATIONS } from '@craig/retention';
import { EXCHANGE_ARCHIVE_SPECS } from './archive-specs.ts';

/** The service's own set (`exchange`): send jobs and the three SSA tables. */
export const EXCHANGE_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'exchange',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Send jobs move through their statuses and are swept once finished (a runtime delete); the
  // SSA tables move forward only and are deleted only through the prune gate (docs/security.md).
  runtimeGrants: defineRuntimeGrants({
    tables: { exchange_send_jobs: ['select', 'insert', 'delete'], ssa_screening_runs: ['select', 'insert'], ssa_screening_members: ['select', 'insert'], ssa_transport_handoffs: ['select', 'insert'] },
    updateColumns: {
      exchange_send_jobs: ['status', 'attempts', 'finished_at'],
      ssa_screening_runs: ['status', 'completed_at', 'invalidated_at'],
      ssa_screening_members: ['status', 'completed_at'],
    },
  }),
});

/**
 * The exchange database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger and the prune gate), then the service's own `exchange`,
 * whose after-migrate step registers its archive specs with the prune gate under the
 * service's hot window (ARCHIVE_HOT_WINDOW_DAYS), so the gate prunes by exactly that policy.
 */
export function exchangeMigrationSets(archive: { readonly hotWindowDays: number }): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, { ...EXCHANGE_MIGRATIONS, afterMigrate: archiveRegistration(EXCHANGE_ARCHIVE_SPECS, archive.hotWindowDays) }];
}
