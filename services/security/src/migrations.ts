import { fileURLToPath } from 'node:url';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { RETENTION_MIGRATIONS } from '@craig/retention';

/** The service's own set (`security`): `audit_log` and `dead_letter_audit`. */
export const SECURITY_MIGRATIONS: MigrationSet = Object.freeze({ name: 'security', directory: fileURLToPath(new URL('../sql/', import.meta.url)) });

/**
 * The security database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger), then the service's own `security`.
 */
export function securityMigrationSets(): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, SECURITY_MIGRATIONS];
}
