import { defineRuntimeGrants, type MigrationSet } from '@craig/db';

/**
 * The `retention` migration set: the archive ledger, the prune gate's registry and the gate.
 * A service that archives applies it after the platform's `mq` set and before its own, whose
 * `afterMigrate` is `archiveRegistration(specs, hotWindowDays)`.
 *
 * The runtime role reads the ledger and the registry and calls the gate; it cannot write
 * either table, and holds no DELETE on any archived table (docs/adr/063-runtime-roles.md).
 */
export const RETENTION_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'retention',
  directory: new URL('../sql/', import.meta.url),
  runtimeGrants: defineRuntimeGrants({
    tables: { archive_ledger: ['select'], archive_tables: ['select'] },
    functions: ['archive_prune_batch(uuid, text, text, text, bigint, integer, text, text, timestamptz, timestamptz, tid[], text[], text[], integer)'],
  }),
});
