import { fileURLToPath } from 'node:url';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';

/** The service's own set (`financial`): subsidy imports and the reconcile queue. */
export const FINANCIAL_MIGRATIONS: MigrationSet = Object.freeze({ name: 'financial', directory: fileURLToPath(new URL('../sql/', import.meta.url)) });

/** The financial database's sets, in order: `mq` (outbox and inbox, as every service), then `financial`. */
export function financialMigrationSets(): MigrationSet[] {
  return [MQ_MIGRATIONS, FINANCIAL_MIGRATIONS];
}
