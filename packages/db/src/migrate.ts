import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { withDedicatedSession } from './dedicated-session.ts';
import { MigrationError } from './errors.ts';
import { readMigrationSet, type MigrationFile, type MigrationSet } from './internal/migration-files.ts';
import { LOCK_KEYS } from './locks.ts';
import { applyRuntimeGrants, mergeRuntimeGrants, type AppliedGrants } from './runtime-grants.ts';
import { ensureRuntimeRole, type RuntimeRoleOptions, type RuntimeRoleReport } from './runtime-role.ts';

export type { MigrationFile, MigrationHook, MigrationPreflightContext, MigrationSet } from './internal/migration-files.ts';
export { readMigrationSet } from './internal/migration-files.ts';

export interface MigrateOptions {
  readonly service: string;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
  /** How long to wait for another runner that holds the migrator lock. */
  readonly lockWaitMs?: number;
  /**
   * The service's runtime login: ensured (created, or corrected: LOGIN, no cluster-wide
   * powers, no memberships) and given exactly the sets' `runtimeGrants`, everything else it
   * held in this database revoked. Run as the tables' owner (docs/adr/063-runtime-roles.md).
   */
  readonly runtime?: RuntimeRoleOptions;
}

export interface MigrateReport {
  readonly applied: ReadonlyArray<{ readonly set: string; readonly version: number; readonly name: string; readonly ms: number }>;
  readonly alreadyApplied: number;
  /** Present when run with `runtime`: what was done to the role and granted to it. */
  readonly runtime?: { readonly role: RuntimeRoleReport; readonly grants: AppliedGrants };
}

interface AppliedRow {
  migration_set: string;
  version: string;
  name: string;
  checksum: string;
}

/**
 * Apply the sets' pending migrations, sets in the order given, files by version; one
 * transaction each. Concurrent runners serialize on the migrator lock, so each file runs once.
 * Before anything runs, each set's `preflight` (an installer guard) runs, then every applied
 * migration is checked against its file: an edited or deleted applied migration, or a new file
 * older than one already applied, refuses to start.
 */
export async function migrate(url: string, sets: readonly MigrationSet[], options: MigrateOptions): Promise<MigrateReport> {
  const names = new Set<string>();
  for (const set of sets) {
    if (names.has(set.name)) throw new MigrationError('migration_invalid', `migration set "${set.name}" is declared twice`, { set: set.name });
    names.add(set.name);
  }
  const files = (await Promise.all(sets.map((s) => readMigrationSet(s)))).flat();

  return withDedicatedSession(
    url,
    async (session) => {
      const { sql } = session;
      await session.advisoryLock(LOCK_KEYS.migrator, options.lockWaitMs ?? 120_000);
      const guarded = sets.filter((s) => s.preflight !== undefined);
      if (guarded.length > 0) {
        const [db] = await sql<{ name: string }[]>`select current_database() as name`;
        for (const set of guarded) await set.preflight!({ sql, database: db!.name });
      }
      await sql`
        create table if not exists craig_migrations (
          migration_set text not null,
          version bigint not null,
          name text not null,
          checksum text not null,
          applied_at timestamptz not null default now(),
          execution_ms integer not null,
          primary key (migration_set, version)
        )`;
      const applied = await sql<AppliedRow[]>`select migration_set, version::text, name, checksum from craig_migrations`;
      const pending = plan(files, applied);

      const report: MigrateReport['applied'][number][] = [];
      for (const file of pending) {
        session.throwIfAborted();
        const started = performance.now();
        try {
          await sql.begin(async (tx) => {
            // A migration may legitimately run long; DDL still gives up on a lock it cannot get
            // soon rather than queueing every writer behind it.
            await tx`select set_config('statement_timeout', '0', true), set_config('lock_timeout', '15s', true)`;
            await tx.unsafe(file.sql).simple();
            const ms = Math.round(performance.now() - started);
            await tx`
              insert into craig_migrations (migration_set, version, name, checksum, execution_ms)
              values (${file.set}, ${file.version}, ${file.name}, ${file.checksum}, ${ms})`;
          });
        } catch (cause) {
          throw new MigrationError('migration_failed', `migration ${file.set}/${file.file} failed: ${(cause as Error).message}`, { set: file.set, file: file.file, cause });
        }
        const ms = Math.round(performance.now() - started);
        options.logger?.info({ set: file.set, version: file.version, name: file.name, ms }, 'migration applied');
        report.push({ set: file.set, version: file.version, name: file.name, ms });
      }
      for (const set of sets) {
        if (!set.afterMigrate) continue;
        const [db] = await sql<{ name: string }[]>`select current_database() as name`;
        try {
          await sql.begin((tx) => set.afterMigrate!.run({ sql: tx as unknown as typeof sql, database: db!.name }));
        } catch (cause) {
          throw new MigrationError('migration_failed', `migration set "${set.name}": after-migrate step ${set.afterMigrate.id} failed: ${(cause as Error).message}`, { set: set.name, cause });
        }
      }
      if (!options.runtime) return { applied: report, alreadyApplied: files.length - pending.length };
      // Cluster-wide first (idempotent, race-safe), then this database's grants in one
      // transaction, under the migrator lock: two replicas never grant on one catalog row at once.
      const role = await ensureRuntimeRole(sql, options.runtime);
      const grants = await sql.begin((tx) => applyRuntimeGrants(tx as unknown as typeof sql, options.runtime!.role, mergeRuntimeGrants(sets.map((s) => s.runtimeGrants))));
      options.logger?.info({ role: role.role, created: role.created, altered: role.altered, tables: grants.tables, functions: grants.functions, parameters: role.parameters.map((p) => `${p.parameter}:${p.status}`) }, 'runtime role granted');
      for (const p of role.parameters.filter((x) => x.status === 'refused')) {
        options.logger?.warn({ role: role.role, parameter: p.parameter, reason: p.reason }, `runtime role may not SET ${p.parameter}: its retention sweeps run with the server's setting (grant it as a superuser: GRANT SET ON PARAMETER ${p.parameter} TO ${role.role}; docs/adr/069-prune-wal-compression.md)`);
      }
      return { applied: report, alreadyApplied: files.length - pending.length, runtime: { role, grants } };
    },
    { service: `${options.service}:migrate`, ...(options.signal ? { signal: options.signal } : {}) },
  );
}

function plan(files: readonly MigrationFile[], applied: readonly AppliedRow[]): MigrationFile[] {
  const declared = new Set(files.map((f) => f.set));
  const fileAt = new Map(files.map((f) => [`${f.set}/${f.version}`, f]));
  const appliedAt = new Map<string, AppliedRow>();
  const maxApplied = new Map<string, number>();
  for (const row of applied) {
    if (!declared.has(row.migration_set)) continue; // another component's set: not ours to judge
    const version = Number(row.version);
    appliedAt.set(`${row.migration_set}/${version}`, row);
    maxApplied.set(row.migration_set, Math.max(maxApplied.get(row.migration_set) ?? 0, version));
    const file = fileAt.get(`${row.migration_set}/${version}`);
    const label = `${row.migration_set}/${String(version).padStart(6, '0')}_${row.name}.sql`;
    if (!file) {
      throw new MigrationError('migration_missing', `migration ${label} was applied but its file is missing`, { set: row.migration_set, file: label });
    }
    if (file.checksum !== row.checksum) {
      throw new MigrationError(
        'migration_checksum_mismatch',
        `migration ${file.set}/${file.file} was edited after it was applied (checksum ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… on disk); migrations are forward-only: add a new one`,
        { set: file.set, file: file.file },
      );
    }
  }
  const pending = files.filter((f) => !appliedAt.has(`${f.set}/${f.version}`));
  for (const f of pending) {
    const max = maxApplied.get(f.set) ?? 0;
    if (f.version < max) {
      throw new MigrationError('migration_out_of_order', `migration ${f.set}/${f.file} is older than applied version ${max} of its set`, { set: f.set, file: f.file });
    }
  }
  return pending;
}

/**
 * A content-addressed template recipe for `@craig/testkit`: the id changes whenever any file
 * of any set changes, so a stale template is never reused.
 */
export async function migrationTemplate(sets: readonly MigrationSet[], service = 'test', runtime?: RuntimeRoleOptions): Promise<{ id: string; build: (url: string) => Promise<void> }> {
  const files = (await Promise.all(sets.map((s) => readMigrationSet(s)))).flat();
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f.set}\0${f.version}\0${f.checksum}\0`);
  // Grants and owner-side steps are part of the content: a template copied per test file
  // carries its tables' ACLs (role oids are cluster-wide), so they must match too.
  for (const s of sets) hash.update(`${s.name}\0${JSON.stringify(s.runtimeGrants ?? null)}\0${s.afterMigrate?.id ?? ''}\0`);
  if (runtime) hash.update(`runtime\0${runtime.role}\0`);
  return {
    id: hash.digest('hex').slice(0, 16),
    build: async (url) => {
      await migrate(url, sets, { service, ...(runtime ? { runtime } : {}) });
    },
  };
}
