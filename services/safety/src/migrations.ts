import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { CASE_REFS_MIGRATIONS } from '@craig/service';

/** The service's own set: the `safety_reports` table. */
export const SAFETY_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'safety',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Filed and read; a report is never changed or deleted (docs/security.md).
  runtimeGrants: defineRuntimeGrants({ tables: { safety_reports: ['select', 'insert'] } }),
});

/** The safety database's sets, in order: `mq`, `case_refs` (the local view of cases), then `safety`. */
export const SAFETY_MIGRATION_SETS: readonly MigrationSet[] = Object.freeze([MQ_MIGRATIONS, CASE_REFS_MIGRATIONS, SAFETY_MIGRATIONS]);
