import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';

/** The service's own set (`financial`): subsidy imports and the reconcile queue. */
export const FINANCIAL_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'financial',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Imports are the financial record: written and completed, never deleted. Queue rows move
  // pending → matched → settled; the settled-row sweep is the one delete (docs/security.md).
  runtimeGrants: defineRuntimeGrants({
    tables: { subsidy_imports: ['select', 'insert'], subsidy_import_lines: ['select', 'insert'], subsidy_reconcile_queue: ['select', 'insert', 'delete'] },
    updateColumns: {
      subsidy_imports: ['status', 'matched_count', 'completed_at'],
      subsidy_import_lines: ['matched'],
      subsidy_reconcile_queue: ['status', 'amount', 'import_id', 'import_line', 'matched_at', 'settled_at'],
    },
  }),
});

/** The financial database's sets, in order: `mq` (outbox and inbox, as every service), then `financial`. */
export function financialMigrationSets(): MigrationSet[] {
  return [MQ_MIGRATIONS, FINANCIAL_MIGRATIONS];
}
