import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from 'postgres';
import { MigrationError } from '../errors.ts';
import type { RuntimeGrants } from '../runtime-grants.ts';

/** A named, ordered directory of forward-only migrations (`NNNNNN_name.sql`). */
export interface MigrationSet {
  /** Recorded with every applied version, so two sets may both have a `000001`. */
  readonly name: string;
  readonly directory: string | URL;
  /**
   * Runs on the migrator's session, under the migrator lock, before any file of any set is
   * applied (also when nothing is pending); a throw refuses the whole run and is rethrown as
   * is. An installer guard: a set that may only be installed into certain databases.
   */
  readonly preflight?: (context: MigrationPreflightContext) => Promise<void>;
  /**
   * What the service's runtime role may do with this set's objects. Applied (everything else
   * revoked) after every run given `runtime: { role }`; see `applyRuntimeGrants`.
   */
  readonly runtimeGrants?: RuntimeGrants;
  /**
   * Owner-side work after the files of every set, on every run (also when nothing is pending),
   * under the migrator lock, in its own transaction: what the owner keeps current from the
   * service's settings (the archive engine's registry of prunable tables).
   */
  readonly afterMigrate?: MigrationHook;
}

/** Owner-side work after the migrations; `id` names what it writes, so a test template built with other settings is another template. */
export interface MigrationHook {
  readonly id: string;
  run(context: MigrationPreflightContext): Promise<void>;
}

/** What a set's preflight sees: the migrator's connection and the database it is on. */
export interface MigrationPreflightContext {
  readonly sql: Sql;
  /** `current_database()`. */
  readonly database: string;
}

export interface MigrationFile {
  readonly set: string;
  readonly version: number;
  readonly name: string;
  readonly file: string;
  readonly sql: string;
  /** SHA-256 of the file's bytes, hex. */
  readonly checksum: string;
}

const FILE_PATTERN = /^(\d{6})_([a-z0-9_]+)\.sql$/;
const SET_PATTERN = /^[a-z][a-z0-9_-]*$/;

/** Read and validate a set's files, ordered by version. */
export async function readMigrationSet(set: MigrationSet): Promise<MigrationFile[]> {
  if (!SET_PATTERN.test(set.name)) {
    throw new MigrationError('migration_invalid', `migration set name ${JSON.stringify(set.name)} must be lower-case letters, digits, "_" or "-"`, { set: set.name });
  }
  const dir = typeof set.directory === 'string' ? set.directory : fileURLToPath(set.directory);
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (cause) {
    throw new MigrationError('migration_invalid', `migration set "${set.name}": cannot read ${dir}`, { set: set.name, cause });
  }
  const files: MigrationFile[] = [];
  const byVersion = new Map<number, string>();
  for (const entry of entries.sort()) {
    if (!entry.endsWith('.sql')) continue;
    const match = FILE_PATTERN.exec(entry);
    if (!match) {
      throw new MigrationError('migration_invalid', `migration set "${set.name}": ${entry} does not match NNNNNN_name.sql`, { set: set.name, file: entry });
    }
    const version = Number(match[1]);
    const twin = byVersion.get(version);
    if (twin !== undefined || version === 0) {
      throw new MigrationError('migration_invalid', `migration set "${set.name}": ${entry} ${version === 0 ? 'has version 0' : `has the same version as ${twin}`}`, { set: set.name, file: entry });
    }
    byVersion.set(version, entry);
    const bytes = await readFile(join(dir, entry));
    files.push({
      set: set.name,
      version,
      name: match[2]!,
      file: basename(entry),
      sql: bytes.toString('utf8'),
      checksum: createHash('sha256').update(bytes).digest('hex'),
    });
  }
  return files.sort((a, b) => a.version - b.version);
}
