import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';

/** The service's own set: the `cases` table. */
export const CASES_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'cases',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Opened, read, closed once; never rewritten or deleted (docs/security.md).
  runtimeGrants: defineRuntimeGrants({ tables: { cases: ['select', 'insert'] }, updateColumns: { cases: ['closed_at'] } }),
});

/** The cases database's sets, in order: `mq` (outbox and inbox, as every service), then `cases`. */
export const CASES_MIGRATION_SETS: readonly MigrationSet[] = Object.freeze([MQ_MIGRATIONS, CASES_MIGRATIONS]);
