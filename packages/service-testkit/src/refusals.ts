// Proof by refusal (docs/security.md): what a service's runtime role must not be able to do,
// tried for real on its own connection, each statement in a transaction that is always rolled
// back, so a statement that wrongly succeeds changes nothing and is reported by name.
import type { Sql } from '@craig/db';
import { expect } from 'vitest';

/** `insufficient_privilege`: the server refused for want of a privilege or ownership. */
export const INSUFFICIENT_PRIVILEGE = '42501';

class Rollback extends Error {}

/**
 * Run each statement on `sql` (the service's pool, logged in as its runtime role) and expect
 * every one refused with SQLSTATE 42501. Every statement is tried; all that were not refused
 * so are listed in one failure (`statement → what happened`).
 */
export async function expectRuntimeRefusals(sql: Sql, statements: readonly string[]): Promise<void> {
  const outcomes: string[] = [];
  for (const statement of statements) {
    let outcome: string;
    try {
      await sql.begin(async (tx) => {
        await tx.unsafe(statement);
        throw new Rollback();
      });
      outcome = 'committed';
    } catch (error) {
      if (error instanceof Rollback) outcome = 'succeeded (rolled back by the test)';
      else {
        const code = (error as { code?: string }).code;
        outcome = code === INSUFFICIENT_PRIVILEGE ? INSUFFICIENT_PRIVILEGE : `failed with ${code ?? 'no SQLSTATE'}: ${(error as Error).message}`;
      }
    }
    outcomes.push(`${statement} → ${outcome}`);
  }
  expect(outcomes.filter((o) => !o.endsWith(`→ ${INSUFFICIENT_PRIVILEGE}`))).toEqual([]);
}

/**
 * The schema-level refusals for each table: no trigger switched off (the admission guards, the
 * append-only and insert-only triggers), no DROP, no TRUNCATE, no new column; and, once per
 * role, no new table, no new function and no `session_replication_role = replica` (which would
 * silence every trigger of the session).
 */
export function schemaRefusals(tables: readonly string[]): string[] {
  return [
    ...tables.flatMap((t) => [`alter table ${t} disable trigger all`, `drop table ${t}`, `truncate ${t}`, `alter table ${t} add column intruder int`]),
    'create table intruder (id int)',
    'create function intruder() returns int language sql as $$ select 1 $$',
    "set session_replication_role = 'replica'",
  ];
}

/**
 * What every service's runtime role must be refused on the platform's own tables: rewriting an
 * event or when it was staged, back-dating an inbox record or a latch, and touching the
 * migrations ledger.
 */
export const PLATFORM_REFUSALS: readonly string[] = Object.freeze([
  `update event_outbox set payload = '{}'::jsonb`,
  `update event_outbox set created_at = now() - interval '1 year'`,
  `update event_inbox set received_at = now() - interval '1 year'`,
  'update prune_latch set deleted = 0',
  'delete from craig_migrations',
  `update craig_migrations set checksum = ''`,
]);

/** Who `sql` runs as, and whether it owns anything in its database or is a superuser. */
export async function runtimeIdentity(sql: Sql): Promise<{ readonly role: string; readonly superuser: boolean; readonly owns: number }> {
  const [row] = await sql<{ role: string; superuser: boolean; owns: number }[]>`
    select current_user as role, (select rolsuper from pg_roles where rolname = current_user) as superuser,
           (select count(*)::int from pg_class where relowner = (select oid from pg_roles where rolname = current_user)) as owns`;
  return row!;
}
