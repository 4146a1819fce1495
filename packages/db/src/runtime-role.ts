// The service's runtime login: a cluster-wide role that owns nothing and holds only what
// `applyRuntimeGrants` gives it in each database (docs/adr/063-runtime-roles.md).
//
// Roles are cluster-wide while databases are not: many databases of one service (tests,
// replicas booting at once, benchmarks) ensure the same role on one cluster concurrently. So
// every step here is idempotent and tolerates a concurrent twin: CREATE ROLE's loser sees
// duplicate_object or unique_violation; two ALTER ROLEs of one role race on its pg_authid row
// ("tuple concurrently updated") and the loser retries; nothing is altered that is already
// right, so steady-state boots write nothing cluster-wide.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { Sql } from 'postgres';
import { RuntimeRoleError } from './errors.ts';

/** A runtime role name: a plain lower-case identifier (never quoted differently by anything). */
export const ROLE_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

export interface RuntimeRoleOptions {
  readonly role: string;
  /**
   * The login's password (from the runtime `DATABASE_URL`). Sent as a SCRAM-SHA-256 verifier
   * computed here, so the statement (and a server's `log_statement = 'ddl'`) never carries it.
   */
  readonly password?: string;
  /**
   * Also set the password of a role that exists (`pnpm xtask migrate` rotates it this way);
   * otherwise only a role created here gets one.
   */
  readonly resetPassword?: boolean;
}

export interface RuntimeRoleReport {
  readonly role: string;
  readonly created: boolean;
  /** Attributes corrected on an existing role (`LOGIN`, `NOSUPERUSER`, …). */
  readonly altered: readonly string[];
  readonly passwordSet: boolean;
  /** Memberships revoked (the role must not inherit anyone's privileges). */
  readonly revokedMemberships: readonly string[];
  /** `SET ON PARAMETER` privileges for {@link RUNTIME_PARAMETERS}: held already, granted now, or refused (and why). */
  readonly parameters: readonly ParameterGrant[];
}

/**
 * Superuser parameters the runtime role may set on its own sessions: `wal_compression`, with
 * which a retention sweep compresses the full-page images of its own deletes (ADR-069). It
 * changes only what that session writes to the WAL, never another session's or the server's.
 */
export const RUNTIME_PARAMETERS: readonly string[] = ['wal_compression'];

export interface ParameterGrant {
  readonly parameter: string;
  readonly status: 'held' | 'granted' | 'refused';
  /** For `refused`: the server's message (only a superuser, or a holder WITH GRANT OPTION, may grant it; PostgreSQL 15+). */
  readonly reason?: string;
}

interface RoleRow {
  oid: number;
  rolsuper: boolean;
  rolcreatedb: boolean;
  rolcreaterole: boolean;
  rolreplication: boolean;
  rolbypassrls: boolean;
  rolcanlogin: boolean;
}

/** What the runtime role must be: a login with no cluster-wide power at all. */
const REQUIRED: ReadonlyArray<readonly [keyof RoleRow, boolean, string]> = [
  ['rolcanlogin', true, 'LOGIN'],
  ['rolsuper', false, 'NOSUPERUSER'],
  ['rolcreatedb', false, 'NOCREATEDB'],
  ['rolcreaterole', false, 'NOCREATEROLE'],
  ['rolreplication', false, 'NOREPLICATION'],
  ['rolbypassrls', false, 'NOBYPASSRLS'],
];

export function assertRoleName(role: string): void {
  if (!ROLE_NAME_PATTERN.test(role)) throw new RuntimeRoleError('runtime_role_invalid', `runtime role ${JSON.stringify(role)} must be a lower-case identifier ([a-z_][a-z0-9_]{0,62})`, { role });
}

/**
 * Create the runtime login role, or bring an existing one to what it must be: LOGIN, no
 * superuser, createdb, createrole, replication or bypassrls, a member of no other role. Needs
 * CREATEROLE (or superuser) only when something has to change.
 */
export async function ensureRuntimeRole(sql: Sql, options: RuntimeRoleOptions): Promise<RuntimeRoleReport> {
  const { role } = options;
  assertRoleName(role);
  const verifier = options.password === undefined ? undefined : scramVerifier(options.password);
  const attributes = REQUIRED.map(([, , keyword]) => keyword).join(' ');
  let created = false;
  let existing = await readRole(sql, role);
  if (!existing) {
    try {
      await sql.unsafe(`create role ${quote(role)} ${attributes}${verifier ? ` password '${verifier}'` : ''}`);
      created = true;
    } catch (error) {
      // A concurrent twin created it first: it exists now, which is all this step wants.
      if (!isCode(error, '42710') && !isCode(error, '23505')) throw wrap(error, role, 'create');
    }
    existing = await readRole(sql, role);
    if (!existing) throw new RuntimeRoleError('runtime_role_failed', `runtime role ${role} does not exist after CREATE ROLE`, { role });
  }
  const wrong = REQUIRED.filter(([column, value]) => existing[column] !== value).map(([, , keyword]) => keyword);
  if (wrong.length > 0) await retryConcurrent(() => sql.unsafe(`alter role ${quote(role)} ${wrong.join(' ')}`), role, 'alter');
  let passwordSet = created && verifier !== undefined;
  if (!created && verifier !== undefined && options.resetPassword) {
    await retryConcurrent(() => sql.unsafe(`alter role ${quote(role)} password '${verifier}'`), role, 'set the password of');
    passwordSet = true;
  }
  const memberships = await sql<{ name: string }[]>`
    select r.rolname as name from pg_auth_members m join pg_roles r on r.oid = m.roleid where m.member = ${existing.oid} order by 1`;
  for (const { name } of memberships) await retryConcurrent(() => sql.unsafe(`revoke ${quote(name)} from ${quote(role)}`), role, `revoke ${name} from`);
  const parameters: ParameterGrant[] = [];
  for (const parameter of RUNTIME_PARAMETERS) parameters.push(await grantParameter(sql, role, parameter));
  return { role, created, altered: created ? [] : wrong, passwordSet, revokedMemberships: memberships.map((m) => m.name), parameters };
}

/**
 * `GRANT SET ON PARAMETER` unless the role holds it already (so steady-state boots write
 * nothing cluster-wide). Parameter privileges are cluster-wide rows: a concurrent twin's grant
 * is retried like the role's own ALTERs. A login that may not grant it (anything but a
 * superuser, on a managed server say) gets `refused`, not an error: the sweeps then run with
 * the server's setting.
 */
async function grantParameter(sql: Sql, role: string, parameter: string): Promise<ParameterGrant> {
  const [server] = await sql<{ version: number }[]>`select current_setting('server_version_num')::int as version`;
  if (server!.version < 150000) return { parameter, status: 'refused', reason: `parameter privileges need PostgreSQL 15 (server ${server!.version})` };
  const [held] = await sql<{ held: boolean }[]>`select has_parameter_privilege(${role}, ${parameter}, 'SET') as held`;
  if (held!.held) return { parameter, status: 'held' };
  try {
    await retryConcurrent(() => sql.unsafe(`grant set on parameter ${parameter} to ${quote(role)}`), role, `grant SET on ${parameter} to`);
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    if (isCode(cause, '42501')) return { parameter, status: 'refused', reason: (cause as Error).message };
    throw error;
  }
  return { parameter, status: 'granted' };
}

async function readRole(sql: Sql, role: string): Promise<RoleRow | undefined> {
  const [row] = await sql<RoleRow[]>`
    select oid::int, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin
    from pg_roles where rolname = ${role}`;
  return row;
}

/**
 * A PostgreSQL SCRAM-SHA-256 verifier (RFC 5802 / 7677: 4096 iterations, 16-byte salt), the
 * form `ALTER ROLE … PASSWORD` stores as is. The password's UTF-8 bytes are used unprepared
 * (SASLprep is the identity on printable ASCII).
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** A role name validated by {@link ROLE_NAME_PATTERN} needs no escaping; quoted anyway. */
function quote(role: string): string {
  if (!/^[A-Za-z0-9_]+$/.test(role)) throw new RuntimeRoleError('runtime_role_invalid', `role ${JSON.stringify(role)} is not a plain identifier`, { role });
  return `"${role}"`;
}

function isCode(error: unknown, code: string): boolean {
  return (error as { code?: unknown } | undefined)?.code === code;
}

/** Two ALTER/GRANTs of one role at once: the loser fails on the catalog row and tries again. */
async function retryConcurrent(fn: () => Promise<unknown>, role: string, what: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await fn();
      return;
    } catch (error) {
      const concurrent = (isCode(error, 'XX000') && /tuple concurrently updated/.test((error as Error).message)) || isCode(error, '23505');
      if (!concurrent || attempt >= 8) throw wrap(error, role, what);
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.floor(Math.random() * 20)));
    }
  }
}

function wrap(error: unknown, role: string, what: string): RuntimeRoleError {
  const privilege = isCode(error, '42501');
  return new RuntimeRoleError(
    privilege ? 'runtime_role_privilege' : 'runtime_role_failed',
    `could not ${what} the runtime role ${role}: ${(error as Error).message}${privilege ? ' (the migration login needs CREATEROLE, or an operator creates the role: CREATE ROLE … LOGIN)' : ''}`,
    { role, cause: error },
  );
}
