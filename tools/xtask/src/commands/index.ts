import type { Command } from '../command.ts';
import { archiveCommand } from './archive.ts';
import { archiveFetchCommand } from './archive-fetch.ts';
import { benchCommand } from './bench.ts';
import { devstackCommand } from './devstack.ts';
import { docsCommand } from './docs.ts';
import { faultsCommand } from './faults.ts';
import { fleetCommand } from './fleet.ts';
import { invariantsCommand } from './invariants.ts';
import { migrateCommand } from './migrate.ts';
import { pruneCommand } from './prune.ts';
import { schemaCommand } from './schema.ts';
import { securityCommand } from './security.ts';

/** Every command, in `--help` order. */
export const COMMANDS: readonly Command[] = [devstackCommand, migrateCommand, pruneCommand, invariantsCommand, fleetCommand, archiveCommand, archiveFetchCommand, docsCommand, schemaCommand, securityCommand, benchCommand, faultsCommand];
