// `--outbox hot-ceiling` of `bench drain` and `bench prune` (ADR-087): the outbox of a proposed
// design whose drain stamp is a HOT update, measured before it is built. NOT the shipped outbox,
// and not safe to ship: see hotOutboxCeiling.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { UsageError } from '../command.ts';

/** Which outbox a bench run measures: the shipped one (its migrations), or ADR-087's ceiling. */
export type BenchOutbox = 'shipped' | 'hot-ceiling';

/** `--outbox shipped|hot-ceiling`; shipped by default. */
export function outboxOption(options: ReadonlyMap<string, string>): BenchOutbox {
  const value = options.get('outbox') ?? 'shipped';
  if (value !== 'shipped' && value !== 'hot-ceiling') throw new UsageError(`--outbox must be shipped or hot-ceiling: ${value}`);
  return value;
}

/**
 * Turn a bench database's `event_outbox` (from the shipped migrations) into the ceiling of
 * ADR-087's HOT outbox, whose indexes never name `published_at`, so that the drain's stamp can
 * be a heap-only update:
 *
 * - the pending index and the prune index (both partial on `published_at`) are dropped; the
 *   sweep walks `event_outbox_created (created_at)` instead and checks `published_at` in the heap;
 * - `staged_xid` (the inserting transaction's id) and its index are added, as the sound design
 *   needs them to find rows committed behind the drain's low mark, so inserts pay for them here too;
 * - fillfactor 50 leaves each page room for its rows' stamped versions; with `relayout`, the
 *   rows already there are rewritten that way (`vacuum full`, then analyzed), as a HOT outbox's
 *   pages would hold them (a caller that reloads its rows by INSERT has no need);
 * - `event_outbox_claim` claims from a low mark kept in the sequence `bench_claim_low`, which
 *   each claim moves to the last id it took (`resetClaimLow` rewinds it).
 *
 * The low mark is why this is a ceiling and not the design: nothing here finds a row whose
 * producer commits after a claim moved past its id (ids are taken at insert, not at commit), a
 * row a replay or redrive makes pending again behind the mark, or a row whose claim rolled back.
 * The bench has none of those; a service would lose such rows (the test shows one). The sound
 * design pays for finding them (ADR-087), so what this measures is an upper bound.
 */
export async function hotOutboxCeiling(sql: Sql, { relayout }: { readonly relayout: boolean }): Promise<void> {
  await sql`drop index event_outbox_pending`;
  await sql`drop index event_outbox_prune`;
  await sql`create index event_outbox_created on event_outbox (created_at)`;
  await sql`alter table event_outbox add column staged_xid xid8`;
  await sql`alter table event_outbox alter column staged_xid set default pg_current_xact_id()`;
  await sql`create index event_outbox_staged_xid on event_outbox (staged_xid)`;
  await sql`alter table event_outbox set (fillfactor = 50)`;
  await sql`create sequence bench_claim_low`;
  await sql.unsafe(await ceilingClaim());
  if (relayout) {
    await sql`vacuum full event_outbox`;
    await sql`vacuum analyze event_outbox`;
  }
}

/**
 * The shipped claim (sql/000005_outbox_claim.sql) but for where it starts and that it moves the
 * mark: the same signature, columns, row and byte bounds, SKIP LOCKED and id order. Derived from
 * the migration's own text, so the two cannot drift apart: each edit must apply exactly once, or
 * this throws, naming it.
 */
async function ceilingClaim(): Promise<string> {
  const dir = MQ_MIGRATIONS.directory;
  const file = typeof dir === 'string' ? join(dir, '000005_outbox_claim.sql') : new URL('000005_outbox_claim.sql', dir);
  let text = await readFile(file, 'utf8');
  const edits: ReadonlyArray<readonly [string, string]> = [
    ['create function event_outbox_claim(', 'create or replace function event_outbox_claim('],
    ['  v_rows integer := 0;\n', '  v_rows integer := 0;\n  v_low bigint := (select last_value from bench_claim_low);\n  v_id bigint;\n  v_last bigint;\n'],
    ['select o.id::text,', 'select o.id,'],
    ['where o.published_at is null', 'where o.id >= v_low and o.published_at is null'],
    ['fetch due into id,', 'fetch due into v_id,'],
    ['    exit when not found;\n', '    exit when not found;\n    v_last := v_id;\n    id := v_id::text;\n'],
    // Not transactional: the next claim (another lane's, before this one commits) starts here.
    ['  close due;\n', "  close due;\n  if v_last is not null then perform setval('bench_claim_low', v_last); end if;\n"],
  ];
  for (const [from, to] of edits) {
    const at = text.indexOf(from);
    if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`${String(file)} changed: the HOT outbox ceiling's claim edits ${JSON.stringify(from)}, which must occur exactly once; update hot-outbox.ts`);
    text = text.slice(0, at) + to + text.slice(at + from.length);
  }
  return text;
}

/** Rewind the ceiling's low mark to the first id (after the bench restores its pending rows). */
export async function resetClaimLow(sql: Sql): Promise<void> {
  await sql`select setval('bench_claim_low', 1, false)`;
}
