import type { Sql } from 'postgres';

/** What a role may do with one table, as the server decides it (its own grants and PUBLIC's). */
interface TableRow {
  name: string;
  select: boolean;
  insert: boolean;
  update: boolean;
  updateColumns: string[];
  delete: boolean;
  truncate: boolean;
  references: boolean;
  trigger: boolean;
  owner: boolean;
}

const mark = (can: boolean) => (can ? '✓' : '—');

/**
 * A deterministic Markdown rendering of `role`'s effective privileges in the public schema of
 * the database `sql` is on, from the server's own privilege checks (`has_*_privilege`, so grants
 * through PUBLIC count): every table, the sequences it may use, and every SECURITY DEFINER
 * function with who may call it and its pinned settings.
 */
export async function renderPrivileges(sql: Sql, role: string): Promise<string> {
  const tables = await sql<TableRow[]>`
    select c.relname as name,
           has_table_privilege(${role}, c.oid, 'SELECT') as select,
           has_table_privilege(${role}, c.oid, 'INSERT') as insert,
           has_table_privilege(${role}, c.oid, 'UPDATE') as update,
           array(select a.attname::text from pg_attribute a
                 where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                   and has_column_privilege(${role}, c.oid, a.attnum, 'UPDATE')
                 order by a.attnum) as "updateColumns",
           has_table_privilege(${role}, c.oid, 'DELETE') as delete,
           has_table_privilege(${role}, c.oid, 'TRUNCATE') as truncate,
           has_table_privilege(${role}, c.oid, 'REFERENCES') as references,
           has_table_privilege(${role}, c.oid, 'TRIGGER') as trigger,
           pg_has_role(${role}, c.relowner, 'USAGE') as owner
    from pg_class c
    where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
    order by c.relname`;
  const lines = [
    '| table | SELECT | INSERT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER | owner |',
    '|---|---|---|---|---|---|---|---|---|',
    ...tables.map((t) => {
      const update = t.update ? '✓' : t.updateColumns.length > 0 ? t.updateColumns.map((c) => `\`${c}\``).join(', ') : '—';
      return `| \`${t.name}\` | ${mark(t.select)} | ${mark(t.insert)} | ${update} | ${mark(t.delete)} | ${mark(t.truncate)} | ${mark(t.references)} | ${mark(t.trigger)} | ${t.owner ? '**yes**' : 'no'} |`;
    }),
  ];
  const sequences = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c
    where c.relnamespace = 'public'::regnamespace and c.relkind = 'S'
      -- The planner may evaluate the privilege check before relkind: only ask it of sequences.
      and case when c.relkind = 'S' then has_sequence_privilege(${role}, c.oid, 'USAGE') else false end
    order by 1`;
  lines.push('', `Sequences it may use (\`USAGE\`, for serial columns): ${sequences.length > 0 ? sequences.map((s) => `\`${s.name}\``).join(', ') : 'none'}.`);
  const definers = await sql<{ signature: string; role_may: boolean; public_may: boolean; config: string[] | null }[]>`
    select p.oid::regprocedure::text as signature,
           has_function_privilege(${role}, p.oid, 'EXECUTE') as role_may,
           coalesce(exists (select 1 from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a where a.grantee = 0 and a.privilege_type = 'EXECUTE'), false) as public_may,
           p.proconfig as config
    from pg_proc p
    where p.pronamespace = 'public'::regnamespace and p.prosecdef
    order by 1`;
  lines.push('', 'SECURITY DEFINER functions (they run as the owner of the tables):', '');
  if (definers.length === 0) lines.push('- none');
  for (const d of definers) {
    const who = d.public_may ? 'anyone (PUBLIC)' : d.role_may ? 'this role only (not PUBLIC)' : 'not this role';
    lines.push(`- \`${d.signature}\`: callable by ${who}; ${d.config?.length ? `pinned ${d.config.map((c) => `\`${c}\``).join(', ')}` : '**no pinned search_path**'}`);
  }
  const [attrs] = await sql<{ attrs: string; member_of: string[] }[]>`
    select concat_ws(', ', case when rolcanlogin then 'LOGIN' else 'NOLOGIN' end, case when rolsuper then 'SUPERUSER' end,
                     case when rolcreatedb then 'CREATEDB' end, case when rolcreaterole then 'CREATEROLE' end,
                     case when rolreplication then 'REPLICATION' end, case when rolbypassrls then 'BYPASSRLS' end) as attrs,
           array(select g.rolname::text from pg_auth_members m join pg_roles g on g.oid = m.roleid where m.member = r.oid order by 1) as member_of
    from pg_roles r where rolname = ${role}`;
  const [schema] = await sql<{ usage: boolean; create: boolean }[]>`
    select has_schema_privilege(${role}, 'public', 'USAGE') as usage, has_schema_privilege(${role}, 'public', 'CREATE') as create`;
  // Parameter privileges are cluster-wide (pg_parameter_acl): the superuser parameters it may SET on its own sessions.
  const parameters = await sql<{ name: string }[]>`
    select parname as name from pg_parameter_acl where has_parameter_privilege(${role}, parname, 'SET') order by 1`;
  lines.push(
    '',
    `Superuser parameters it may SET on its own sessions: ${parameters.length > 0 ? parameters.map((p) => `\`${p.name}\``).join(', ') : 'none'}.`,
    '',
    `Role: ${attrs?.attrs ?? 'absent'}; member of ${attrs?.member_of.length ? attrs.member_of.join(', ') : 'no role'}. Schema \`public\`: USAGE ${mark(schema!.usage)}, CREATE ${mark(schema!.create)}.`,
  );
  return `${lines.join('\n')}\n`;
}
