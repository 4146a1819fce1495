import type { MigrationSet } from '@craig/db';

/**
 * The `retention` migration set: the archive ledger. A service that archives applies it after
 * the platform's `mq` set and before its own.
 */
export const RETENTION_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'retention',
  directory: new URL('../sql/', import.meta.url),
});
