// The devstack's databases: one per service and the bus, created on the chosen server when
// missing. Names come from --db-prefix (validated) or the user's URLs, and are quoted as
// identifiers, never spliced into SQL text.
import { ensureRuntimeRole } from '@craig/db';
import postgres from 'postgres';
import { databaseOf, withDatabase } from './env.ts';

/** A PostgreSQL server the devstack was pointed at does not answer. */
export class DevstackServerUnreachable extends Error {
  override readonly name = 'DevstackServerUnreachable';
  readonly code = 'devstack_server_unreachable';
  constructor(
    readonly url: string,
    readonly variable: string,
    cause: unknown,
  ) {
    super(`PostgreSQL from ${variable} (${redact(url)}) does not answer: ${(cause as Error).message}`, { cause });
  }
}

export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

function connect(url: string) {
  return postgres(url, { max: 1, connect_timeout: 10, onnotice: () => {}, connection: { application_name: 'craig:devstack' } });
}

export async function assertAnswers(url: string, variable: string): Promise<void> {
  const sql = connect(url);
  try {
    await sql`select 1`;
  } catch (cause) {
    throw new DevstackServerUnreachable(url, variable, cause);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Create the database `url` names unless it exists; returns its oid (a recreated database has a
 * new one, so the seeding record in state.json does not outlive it) and whether it was created.
 * `maintenanceUrl` is where to connect for that (the server URL the user gave, else `postgres`).
 */
export async function ensureDatabase(url: string, maintenanceUrl: string = withDatabase(url, 'postgres')): Promise<{ oid: number; created: boolean }> {
  const name = databaseOf(url);
  const sql = connect(maintenanceUrl);
  try {
    const find = async () => (await sql<{ oid: number }[]>`select oid::int as oid from pg_database where datname = ${name}`)[0]?.oid;
    const existing = await find();
    if (existing !== undefined) return { oid: existing, created: false };
    try {
      await sql`create database ${sql(name)}`;
    } catch (error) {
      // Another process created it in between: fine.
      if ((error as { code?: string }).code !== '42P04') throw error;
    }
    return { oid: (await find())!, created: true };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Same host and port: the server URL can serve as the maintenance connection for this database. */
export function sameServer(a: string, b: string): boolean {
  const x = new URL(a);
  const y = new URL(b);
  return x.hostname === y.hostname && (x.port || '5432') === (y.port || '5432');
}

/** Drop databases (the smoke test's cleanup); terminates their connections first. */
export async function dropDatabases(adminUrl: string, names: readonly string[]): Promise<void> {
  const sql = connect(adminUrl);
  try {
    for (const name of names) await sql`drop database if exists ${sql(name)} with (force)`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Give a runtime role the devstack's password (creating it when missing), as the migration
 * login: a role left by an earlier devstack on the same server gets this run's password, so the
 * services can log in. The service's own boot then applies its grants.
 */
export async function ensureRuntimeLogin(ownerUrl: string, role: string, password: string): Promise<void> {
  const sql = connect(ownerUrl);
  try {
    await ensureRuntimeRole(sql, { role, password, resetPassword: true });
  } finally {
    await sql.end({ timeout: 1 });
  }
}
