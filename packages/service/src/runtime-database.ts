// The two logins of a service database (docs/adr/063-runtime-roles.md): the migration login
// (MIGRATION_DATABASE_URL, else DATABASE_URL's) applies the schema, creates or corrects the
// runtime role and grants it exactly what the service's migration sets declare; everything at
// runtime runs as that role. Shared by the boot helper and `pnpm xtask migrate`, so a service
// and its operator tool prepare a database the same way.
import { migrate, type MigrateReport, type MigrationSet, type Sql } from '@craig/db';
import type { BaseSettings } from '@craig/settings';
import type { Logger } from 'pino';

export interface PreparedDatabase {
  readonly report: MigrateReport;
  /**
   * The `SET ROLE` the runtime pool needs at connection start: the runtime role when
   * DATABASE_URL logs in as another login (single-user development), else nothing.
   */
  readonly poolRole: string | undefined;
}

export interface PrepareOptions {
  readonly service: string;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
  /** Also set an existing role's password from DATABASE_URL (`pnpm xtask migrate` rotates it so). */
  readonly resetPassword?: boolean;
}

/** The login a PostgreSQL URL names ('' when it names none: the client's OS user). */
export function loginOf(url: string): string {
  return decodeURIComponent(new URL(url).username);
}

/**
 * Migrate the service's database as its owner and prepare its runtime role: created when
 * missing (with DATABASE_URL's password when DATABASE_URL logs in as it), corrected, and
 * granted exactly its sets' `runtimeGrants` with everything else revoked.
 */
export async function prepareServiceDatabase(settings: Pick<BaseSettings, 'databaseUrl' | 'migrationDatabaseUrl' | 'runtimeRole'>, sets: readonly MigrationSet[], options: PrepareOptions): Promise<PreparedDatabase> {
  const role = settings.runtimeRole;
  const runtime = new URL(settings.databaseUrl);
  const logsInAsRole = loginOf(settings.databaseUrl) === role;
  const password = logsInAsRole && runtime.password !== '' ? decodeURIComponent(runtime.password) : undefined;
  const report = await migrate(settings.migrationDatabaseUrl ?? settings.databaseUrl, sets, {
    service: options.service,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    runtime: { role, ...(password === undefined ? {} : { password }), ...(options.resetPassword ? { resetPassword: true } : {}) },
  });
  return { report, poolRole: logsInAsRole ? undefined : role };
}

/** Who a runtime connection is, as the server sees it. */
export interface RuntimeIdentity {
  /** `session_user`: the login. */
  readonly login: string;
  /** `current_user`: the role its privileges are checked as. */
  readonly role: string;
  /** The login is a superuser or owns tables of this database: it could undo its SET ROLE and act as the owner. */
  readonly loginIsPrivileged: boolean;
}

/**
 * Check the runtime pool: it must run as the runtime role. When the login behind it is a
 * superuser or owns the tables (a single-user development setup), say so: `SET ROLE` guards
 * against the service's own mistakes, not against a compromised process, which can `RESET ROLE`.
 */
export async function checkRuntimeIdentity(sql: Sql, settings: BaseSettings, logger: Logger): Promise<RuntimeIdentity> {
  const [row] = await sql<{ login: string; role: string; superuser: boolean; owns: boolean }[]>`
    select session_user as login, current_user as role,
           coalesce((select rolsuper from pg_roles where rolname = session_user), false) as superuser,
           exists (select 1 from pg_class c where c.relowner = (select oid from pg_roles where rolname = session_user)
                   and c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')) as owns`;
  if (row!.role !== settings.runtimeRole) {
    throw new Error(`the runtime pool runs as ${row!.role}, not the runtime role ${settings.runtimeRole}`);
  }
  const loginIsPrivileged = row!.superuser || row!.owns;
  if (loginIsPrivileged) {
    logger.warn(
      { login: row!.login, runtimeRole: row!.role, superuser: row!.superuser, ownsTables: row!.owns },
      `the runtime login ${row!.login} ${row!.superuser ? 'is a superuser' : 'owns its tables'}: the service runs as ${row!.role} through SET ROLE, which a compromised process could undo; in production log in as ${row!.role} (DATABASE_URL) and migrate as the owner (MIGRATION_DATABASE_URL)`,
    );
  }
  return { login: row!.login, role: row!.role, loginIsPrivileged };
}
