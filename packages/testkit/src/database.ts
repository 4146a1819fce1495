import { randomBytes } from 'node:crypto';
import postgresJs, { type Sql } from 'postgres';
import { databaseUrl, postgres } from './postgres.ts';

/** How to build a template database once; `id` must change whenever its content would. */
export interface TemplateRecipe {
  readonly id: string;
  build(url: string): Promise<void>;
}

export interface TestDatabaseOptions {
  /**
   * Name prefix (`[a-z][a-z0-9_]*`). Names are `<prefix>_<time>_<random>`, so an allow-list
   * such as `inventory_t*` can admit them.
   */
  readonly prefix?: string;
  /** Copied with `CREATE DATABASE … TEMPLATE`; built on first use, shared by every file after. */
  readonly template?: TemplateRecipe | Promise<TemplateRecipe>;
  /** Size of the convenience pool `sql`. Keep it small: many files run at once on a 100-connection server. */
  readonly max?: number;
}

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  /** A small pool on the database, for assertions and setup. */
  readonly sql: Sql;
  /** Close the pool and drop the database (forcing out any session a test left behind). */
  drop(): Promise<void>;
}

const COMMENT_PREFIX = 'craig-testkit:';

/**
 * A fresh database for one test file: its own, not a schema, because advisory locks are per
 * database and the sweeps under test take them.
 */
export async function testDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const prefix = options.prefix ?? 'craig_t';
  if (!/^[a-z][a-z0-9_]{0,30}$/.test(prefix)) throw new TypeError(`test database prefix must match [a-z][a-z0-9_]{0,30}: ${JSON.stringify(prefix)}`);
  const admin = await postgres();
  const template = options.template ? await options.template : undefined;
  const templateName = template ? await ensureTemplate(admin, template) : undefined;
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;

  await withAdmin(admin, async (sql) => {
    await retryWhileInUse(() =>
      templateName ? sql.unsafe(`create database ${name} template ${templateName}`) : sql.unsafe(`create database ${name}`),
    );
    await sql.unsafe(`comment on database ${name} is '${COMMENT_PREFIX}${Date.now()}'`);
  });

  const url = databaseUrl(admin, name);
  const sql = postgresJs(url, { max: options.max ?? 3, idle_timeout: 5, onnotice: () => {}, connection: { application_name: 'craig-testkit' } });
  let dropped = false;
  return {
    name,
    url,
    sql,
    async drop() {
      if (dropped) return;
      dropped = true;
      await sql.end({ timeout: 1 });
      await withAdmin(admin, (a) => a.unsafe(`drop database if exists ${name} with (force)`));
    },
  };
}

/** Build (once, under a lock shared by every worker and run) the template for a recipe. */
async function ensureTemplate(admin: string, recipe: TemplateRecipe): Promise<string> {
  if (!/^[a-z0-9]{1,40}$/.test(recipe.id)) throw new TypeError(`template id must be [a-z0-9]{1,40}: ${JSON.stringify(recipe.id)}`);
  const name = `craig_tpl_${recipe.id}`;
  await withAdmin(admin, async (sql) => {
    await sql`select pg_advisory_lock(hashtext(${name}))`;
    try {
      const [row] = await sql<{ ready: boolean }[]>`
        select coalesce(shobj_description(oid, 'pg_database') like 'craig-testkit-template-ready:%', false) as ready
        from pg_database where datname = ${name}`;
      if (row?.ready) return;
      // Absent, or left half-built by a run that died: build it from scratch.
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.unsafe(`create database ${name}`);
      await recipe.build(databaseUrl(admin, name));
      await sql.unsafe(`comment on database ${name} is 'craig-testkit-template-ready:${Date.now()}'`);
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${name}))`;
    }
  });
  return name;
}

/**
 * Drop databases this kit created more than `olderThanMs` ago (a run that was killed leaves
 * them behind) and templates unused for a day. Called by the vitest global setup.
 */
export async function sweepStaleDatabases(olderThanMs = 3 * 3600_000): Promise<string[]> {
  const admin = await postgres();
  return withAdmin(admin, async (sql) => {
    const rows = await sql<{ datname: string; comment: string }[]>`
      select datname, shobj_description(oid, 'pg_database') as comment
      from pg_database
      where shobj_description(oid, 'pg_database') like 'craig-testkit%'`;
    const dropped: string[] = [];
    const now = Date.now();
    for (const { datname, comment } of rows) {
      const at = Number(comment.slice(comment.lastIndexOf(':') + 1));
      const limit = comment.startsWith('craig-testkit-template') ? 24 * 3600_000 : olderThanMs;
      if (Number.isFinite(at) && now - at > limit && /^[a-z0-9_]+$/.test(datname)) {
        await sql.unsafe(`drop database if exists ${datname} with (force)`);
        dropped.push(datname);
      }
    }
    return dropped;
  });
}

async function withAdmin<T>(admin: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = postgresJs(admin, { max: 1, onnotice: () => {}, connection: { application_name: 'craig-testkit-admin' } });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

// CREATE DATABASE … TEMPLATE fails with 55006 while any session is still connected to the
// template; the builder's connections may take a moment to exit after it closed them.
async function retryWhileInUse<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
