import { fileURLToPath } from 'node:url';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { RETENTION_MIGRATIONS } from '@craig/retention';

/** The service's own set (`rules`): snapshots, promotion previews, evaluations, and version 1 of `default`. */
export const RULES_MIGRATIONS: MigrationSet = Object.freeze({ name: 'rules', directory: fileURLToPath(new URL('../sql/', import.meta.url)) });

/**
 * The rules database's sets, in order: `mq` (outbox and inbox, as every service),
 * `retention` (the archive ledger), then the service's own `rules`.
 */
export function rulesMigrationSets(): MigrationSet[] {
  return [MQ_MIGRATIONS, RETENTION_MIGRATIONS, RULES_MIGRATIONS];
}
