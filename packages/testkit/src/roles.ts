import type { Sql } from 'postgres';

/**
 * Drop test login roles, cluster-wide, with what they hold outside any database: a role that
 * was granted `SET ON PARAMETER` (the runtime role's `wal_compression`) cannot be dropped
 * until that is revoked. Run it after the databases that held their grants are gone.
 */
export async function dropRoles(admin: Sql, roles: readonly string[]): Promise<void> {
  for (const role of roles) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role)) throw new TypeError(`role must be a plain identifier: ${JSON.stringify(role)}`);
    const [exists] = await admin<{ n: number }[]>`select count(*)::int as n from pg_roles where rolname = ${role}`;
    if (exists!.n === 0) continue;
    const parameters = await admin<{ parameter: string }[]>`
      select parname as parameter from pg_parameter_acl where has_parameter_privilege(${role}, parname, 'SET')`;
    for (const { parameter } of parameters) await admin.unsafe(`revoke set on parameter ${parameter} from "${role}"`);
    await admin.unsafe(`drop role if exists "${role}"`);
  }
}
