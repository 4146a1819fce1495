import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { CASE_REFS_MIGRATIONS } from '@craig/service';

/** The service's own set: the `placements` table. */
export const PLACEMENTS_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'placements',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  // Started, read, ended once; never rewritten or deleted (docs/security.md).
  runtimeGrants: defineRuntimeGrants({ tables: { placements: ['select', 'insert'] }, updateColumns: { placements: ['ended_at', 'end_reason'] } }),
});

/** The placements database's sets, in order: `mq`, `case_refs` (the local view of cases), then `placements`. */
export const PLACEMENTS_MIGRATION_SETS: readonly MigrationSet[] = Object.freeze([MQ_MIGRATIONS, CASE_REFS_MIGRATIONS, PLACEMENTS_MIGRATIONS]);
