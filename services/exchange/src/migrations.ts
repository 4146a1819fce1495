import { fileURLToPath } from 'node:url';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { RETENTION_MIGRATIONS } from '@craig/retention';

/** The service's own set (`exchange`): send jobs and the three SSA tables. */
export const EXCHANGE_MIGRATIONS: MigrationSet = Object.freeze({ name: 'exchange', directory: fileURLToPath(new URL('../sql/', import.meta.url)) });

/**
 * The exchange database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger), then the service's own `exchange`.
 */
export function exchangeMigrationSets(): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, EXCHANGE_MIGRATIONS];
}
