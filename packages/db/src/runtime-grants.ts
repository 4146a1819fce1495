// What a service's runtime role may do in its database, declared per migration set beside the
// tables it is about, and applied by the owner after every migration run: everything the role
// holds in the database is revoked, then exactly the declared privileges are granted, in one
// transaction (a running replica sees the old set or the new one, never a gap). Grants are
// per database, so concurrent databases of one service never touch each other's ACLs; within
// one database `migrate` runs this under the migrator lock, so two replicas never race on a
// catalog row either.
import type { Sql } from 'postgres';
import { RuntimeRoleError } from './errors.ts';
import { assertRoleName } from './runtime-role.ts';

export type TablePrivilege = 'select' | 'insert' | 'update' | 'delete';

const TABLE_PRIVILEGES: readonly TablePrivilege[] = ['select', 'insert', 'update', 'delete'];
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
const SIGNATURE = /^[a-z_][a-z0-9_]{0,62}\((?:[a-z_][a-z0-9_ ]*(?:\[\])?(?:, *[a-z_][a-z0-9_ ]*(?:\[\])?)*)?\)$/;

/**
 * The runtime role's privileges on one migration set's objects (all in schema `public`). Never
 * TRUNCATE, REFERENCES or TRIGGER, never ownership: a runtime role cannot change a definition,
 * switch a trigger off or empty a table. `USAGE` on the sequences behind the serial columns of
 * every table it may insert into follows from `insert`.
 */
export interface RuntimeGrants {
  /** Table-level privileges, by table. */
  readonly tables?: Readonly<Record<string, readonly TablePrivilege[]>>;
  /** Column-level UPDATE, by table: only these columns may change (a row's identity and history stay as written). */
  readonly updateColumns?: Readonly<Record<string, readonly string[]>>;
  /**
   * Functions the role may EXECUTE, by signature (`archive_prune_batch(uuid, tid[], text[], text[], integer)`):
   * the SECURITY DEFINER gates through which alone a protected delete happens. Their migration
   * revokes EXECUTE from PUBLIC; this grants it back to the runtime role only.
   */
  readonly functions?: readonly string[];
}

/** Validate (every problem at once) and freeze a set's runtime grants. */
export function defineRuntimeGrants(grants: RuntimeGrants): RuntimeGrants {
  const problems: string[] = [];
  for (const [table, privileges] of Object.entries(grants.tables ?? {})) {
    if (!IDENTIFIER.test(table)) problems.push(`table ${JSON.stringify(table)} is not a plain identifier`);
    for (const p of privileges) if (!TABLE_PRIVILEGES.includes(p)) problems.push(`table ${table}: privilege ${JSON.stringify(p)} is not one of ${TABLE_PRIVILEGES.join(', ')}`);
    if (privileges.length === 0) problems.push(`table ${table}: no privileges (leave it out instead)`);
  }
  for (const [table, columns] of Object.entries(grants.updateColumns ?? {})) {
    if (!IDENTIFIER.test(table)) problems.push(`updateColumns table ${JSON.stringify(table)} is not a plain identifier`);
    if (grants.tables?.[table]?.includes('update')) problems.push(`table ${table}: both table-level update and updateColumns`);
    for (const c of columns) if (!IDENTIFIER.test(c)) problems.push(`table ${table}: column ${JSON.stringify(c)} is not a plain identifier`);
    if (columns.length === 0) problems.push(`table ${table}: updateColumns is empty`);
  }
  for (const f of grants.functions ?? []) if (!SIGNATURE.test(f)) problems.push(`function ${JSON.stringify(f)} is not a signature like name(type, type[])`);
  if (problems.length > 0) throw new TypeError(`invalid runtime grants: ${problems.join('; ')}`);
  return Object.freeze({
    tables: Object.freeze(Object.fromEntries(Object.entries(grants.tables ?? {}).map(([t, p]) => [t, Object.freeze([...new Set(p)])]))),
    updateColumns: Object.freeze(Object.fromEntries(Object.entries(grants.updateColumns ?? {}).map(([t, c]) => [t, Object.freeze([...new Set(c)])]))),
    functions: Object.freeze([...(grants.functions ?? [])]),
  });
}

/** The union of several sets' grants (a table named by two sets gets both lists). */
export function mergeRuntimeGrants(list: readonly (RuntimeGrants | undefined)[]): RuntimeGrants {
  const tables = new Map<string, Set<TablePrivilege>>();
  const columns = new Map<string, Set<string>>();
  const functions = new Set<string>();
  for (const g of list) {
    for (const [t, p] of Object.entries(g?.tables ?? {})) for (const x of p) (tables.get(t) ?? tables.set(t, new Set()).get(t)!).add(x);
    for (const [t, c] of Object.entries(g?.updateColumns ?? {})) for (const x of c) (columns.get(t) ?? columns.set(t, new Set()).get(t)!).add(x);
    for (const f of g?.functions ?? []) functions.add(f);
  }
  // A table-level update makes column lists redundant.
  for (const [t, p] of tables) if (p.has('update')) columns.delete(t);
  return defineRuntimeGrants({
    tables: Object.fromEntries([...tables].map(([t, p]) => [t, TABLE_PRIVILEGES.filter((x) => p.has(x))])),
    updateColumns: Object.fromEntries([...columns].map(([t, c]) => [t, [...c]])),
    functions: [...functions],
  });
}

export interface AppliedGrants {
  readonly tables: number;
  readonly columns: number;
  readonly sequences: readonly string[];
  readonly functions: readonly string[];
}

/**
 * Revoke everything `role` holds in the current database and grant exactly `grants`; run it in
 * a transaction as the tables' owner. Refused, before anything changes, when the role owns
 * something here (an owner can alter, disable triggers and truncate whatever its grants say)
 * or when a grant names an object that does not exist (every one listed).
 */
export async function applyRuntimeGrants(sql: Sql, role: string, grants: RuntimeGrants): Promise<AppliedGrants> {
  assertRoleName(role);
  const [db] = await sql<{ name: string }[]>`select current_database() as name`;
  const database = db!.name;
  const owned = await sql<{ object: string }[]>`
    with r as (select oid from pg_roles where rolname = ${role})
    select 'database ' || datname as object from pg_database, r where datname = current_database() and datdba = r.oid
    union all select 'schema ' || nspname from pg_namespace, r where nspowner = r.oid
    union all select 'relation ' || n.nspname || '.' || c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace, r
      where c.relowner = r.oid and n.nspname not like 'pg\\_temp%' and n.nspname not like 'pg\\_toast\\_temp%'
    union all select 'function ' || p.oid::regprocedure::text from pg_proc p, r where p.proowner = r.oid
    order by 1`;
  if (owned.length > 0) {
    throw new RuntimeRoleError('runtime_role_owns_objects', `runtime role ${role} owns ${owned.map((o) => o.object).join(', ')} in database ${database}: the runtime role must own nothing (ALTER … OWNER TO the migration role)`, {
      role,
      objects: owned.map((o) => o.object),
    });
  }
  await assertObjectsExist(sql, role, grants);

  // Everything the role holds here, in every schema (column privileges go with their table's).
  const schemas = await sql<{ name: string }[]>`
    select nspname as name from pg_namespace where nspname not like 'pg\\_%' and nspname <> 'information_schema' order by 1`;
  for (const { name } of schemas) {
    await sql`revoke all on all tables in schema ${sql(name)} from ${sql(role)}`;
    await sql`revoke all on all sequences in schema ${sql(name)} from ${sql(role)}`;
    await sql`revoke all on all functions in schema ${sql(name)} from ${sql(role)}`;
    await sql`revoke all on schema ${sql(name)} from ${sql(role)}`;
  }
  // Database-level ACLs belong to the database's owner: a migration login that does not own
  // the database leaves them (PUBLIC's default CONNECT lets the role in).
  const [dbOwner] = await sql<{ owns: boolean }[]>`
    select pg_has_role(current_user, datdba, 'USAGE') or (select rolsuper from pg_roles where rolname = current_user) as owns
    from pg_database where datname = current_database()`;
  if (dbOwner?.owns) await sql`revoke all on database ${sql(database)} from ${sql(role)}`;
  // PostgreSQL < 15 let PUBLIC create in schema public: DDL, whatever the role's own grants.
  const [createPublic] = await sql<{ can: boolean }[]>`select has_schema_privilege(${role}, 'public', 'CREATE') as can`;
  if (createPublic?.can) {
    try {
      await sql`revoke create on schema public from public`;
    } catch (cause) {
      throw new RuntimeRoleError('runtime_role_privilege', `PUBLIC may CREATE in schema public of ${database}, so runtime role ${role} could too; revoke it as the schema's owner: REVOKE CREATE ON SCHEMA public FROM PUBLIC`, { role, cause });
    }
  }

  if (dbOwner?.owns) await sql`grant connect on database ${sql(database)} to ${sql(role)}`;
  await sql`grant usage on schema public to ${sql(role)}`;
  const tables = Object.entries(grants.tables ?? {});
  for (const [table, privileges] of tables) {
    await sql`grant ${sql.unsafe(privileges.map((p) => p.toUpperCase()).join(', '))} on table ${sql(`public.${table}`)} to ${sql(role)}`;
  }
  let columns = 0;
  for (const [table, cols] of Object.entries(grants.updateColumns ?? {})) {
    await sql`grant update (${sql(cols as string[])}) on table ${sql(`public.${table}`)} to ${sql(role)}`;
    columns += cols.length;
  }
  // nextval() behind a serial column needs USAGE on its sequence; identity columns need nothing.
  const inserting = tables.filter(([, p]) => p.includes('insert')).map(([t]) => t);
  const sequences = await sql<{ name: string }[]>`
    select s.relname as name
    from pg_depend d
    join pg_class s on s.oid = d.objid and s.relkind = 'S'
    join pg_class t on t.oid = d.refobjid
    where d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass and d.deptype = 'a'
      and t.relnamespace = 'public'::regnamespace and t.relname = any(${inserting})
    order by 1`;
  for (const { name } of sequences) await sql`grant usage on sequence ${sql(`public.${name}`)} to ${sql(role)}`;
  const functions: string[] = [];
  for (const signature of grants.functions ?? []) {
    // PostgreSQL's own rendering of the resolved function: nothing of the declaration is spliced.
    const [fn] = await sql<{ name: string }[]>`select to_regprocedure(${`public.${signature}`})::text as name`;
    await sql`grant execute on function ${sql.unsafe(fn!.name)} to ${sql(role)}`;
    functions.push(fn!.name);
  }
  return { tables: tables.length, columns, sequences: sequences.map((s) => s.name), functions };
}

async function assertObjectsExist(sql: Sql, role: string, grants: RuntimeGrants): Promise<void> {
  const tables = [...new Set([...Object.keys(grants.tables ?? {}), ...Object.keys(grants.updateColumns ?? {})])];
  const present = new Set(
    (await sql<{ name: string }[]>`select relname as name from pg_class where relnamespace = 'public'::regnamespace and relkind in ('r', 'p', 'v') and relname = any(${tables})`).map((r) => r.name),
  );
  const missing = tables.filter((t) => !present.has(t)).map((t) => `table ${t}`);
  for (const [table, cols] of Object.entries(grants.updateColumns ?? {})) {
    if (!present.has(table)) continue;
    const have = new Set(
      (await sql<{ name: string }[]>`select attname as name from pg_attribute where attrelid = ${`public.${table}`}::regclass and attnum > 0 and not attisdropped`).map((r) => r.name),
    );
    for (const c of cols) if (!have.has(c)) missing.push(`column ${table}.${c}`);
  }
  for (const signature of grants.functions ?? []) {
    const [fn] = await sql<{ found: boolean }[]>`select to_regprocedure(${`public.${signature}`}) is not null as found`;
    if (!fn?.found) missing.push(`function ${signature}`);
  }
  if (missing.length > 0) {
    throw new RuntimeRoleError('runtime_grant_unknown_object', `runtime grants for ${role} name what does not exist: ${missing.join(', ')}`, { role, objects: missing });
  }
}
