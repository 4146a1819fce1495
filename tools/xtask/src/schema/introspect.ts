import type { Sql } from 'postgres';

/**
 * A deterministic text rendering of the public schema, from the catalogs rather than pg_dump
 * (whose output changes with the server's minor version): tables with columns, defaults and
 * constraints, then indexes, views, functions and triggers, each sorted by name.
 */
export async function renderSchema(sql: Sql): Promise<string> {
  const out: string[] = [];
  const tables = await sql<{ oid: number; name: string; kind: string; reloptions: string[] | null }[]>`
    select c.oid::int, c.relname as name, c.relkind as kind, c.reloptions
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p')
    order by c.relname`;
  for (const t of tables) {
    const columns = await sql<{ name: string; type: string; notnull: boolean; dflt: string | null; identity: string }[]>`
      select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as notnull,
             pg_get_expr(d.adbin, d.adrelid) as dflt, a.attidentity as identity
      from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where a.attrelid = ${t.oid} and a.attnum > 0 and not a.attisdropped
      order by a.attnum`;
    const constraints = await sql<{ name: string; def: string }[]>`
      select conname as name, pg_get_constraintdef(oid, true) as def
      from pg_constraint where conrelid = ${t.oid} order by conname`;
    const lines = [
      ...columns.map((c) => `  ${c.name} ${c.type}${c.notnull ? ' not null' : ''}${c.dflt ? ` default ${c.dflt}` : ''}${c.identity ? ` generated ${c.identity === 'a' ? 'always' : 'by default'} as identity` : ''}`),
      ...constraints.map((c) => `  constraint ${c.name} ${c.def}`),
    ];
    out.push(`create table ${t.name} (\n${lines.join(',\n')}\n)${t.reloptions?.length ? ` with (${t.reloptions.sort().join(', ')})` : ''};`);
  }
  const indexes = await sql<{ def: string }[]>`
    select pg_get_indexdef(i.indexrelid) as def
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' order by c.relname`;
  out.push(...indexes.map((i) => `${i.def};`));
  const views = await sql<{ name: string; def: string }[]>`
    select c.relname as name, pg_get_viewdef(c.oid, true) as def
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('v', 'm') order by c.relname`;
  out.push(...views.map((v) => `create view ${v.name} as\n${v.def.trim()}`));
  const functions = await sql<{ def: string }[]>`
    select pg_get_functiondef(p.oid) as def
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and p.prokind in ('f', 'p')
    order by p.proname, pg_get_function_identity_arguments(p.oid)`;
  out.push(...functions.map((f) => `${f.def.trim()};`));
  const triggers = await sql<{ def: string }[]>`
    select pg_get_triggerdef(t.oid, true) as def
    from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and not t.tgisinternal order by c.relname, t.tgname`;
  out.push(...triggers.map((t) => `${t.def};`));
  return `${out.join('\n\n')}\n`;
}
