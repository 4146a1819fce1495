import type { Sql, TransactionSql } from '@craig/db';
import { NotFoundError } from './errors.ts';
import { parseRules, type Rule } from './rule-language.ts';

/** The rule set the consumer evaluates events against: its latest snapshot is the active one. */
export const ACTIVE_RULE_SET = 'default';

/** One snapshot as the API returns it. */
export interface Snapshot {
  readonly id: string;
  readonly ruleSet: string;
  readonly version: number;
  readonly rules: readonly Rule[];
  readonly createdAt: string;
  readonly createdBy: string;
}

type SnapshotRow = { id: string; rule_set: string; version: number; rules: string; created_at: string; created_by: string };

// The consumer reads the active snapshot for every event; parsing it once per content, not per
// event, keeps evaluation cheap. Keyed by the rules' jsonb text (never by id: two services in
// one process may hold different databases), bounded, oldest evicted first.
const parsedByText = new Map<string, readonly Rule[]>();
const MAX_CACHED = 64;

function toSnapshot(row: SnapshotRow): Snapshot {
  let rules = parsedByText.get(row.rules);
  if (!rules) {
    rules = parseRules(JSON.parse(row.rules));
    if (parsedByText.size >= MAX_CACHED) parsedByText.delete(parsedByText.keys().next().value!);
    parsedByText.set(row.rules, rules);
  }
  return { id: row.id, ruleSet: row.rule_set, version: row.version, rules, createdAt: row.created_at, createdBy: row.created_by };
}

/**
 * Insert the next version of a rule set (validated rules). Concurrent writers of one set are
 * serialized by a transaction-scoped lock on the set's name, so versions are gapless.
 */
export async function createSnapshot(sql: Sql, input: { readonly ruleSet: string; readonly rules: readonly Rule[]; readonly createdBy: string }): Promise<Snapshot> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('rules.snapshot:' || ${input.ruleSet}, 0))`;
    const [row] = await tx<SnapshotRow[]>`
      insert into rule_set_snapshots (rule_set, version, rules, created_by)
      select ${input.ruleSet}, coalesce(max(version), 0) + 1, ${JSON.stringify(input.rules)}::text::jsonb, ${input.createdBy}
      from rule_set_snapshots where rule_set = ${input.ruleSet}
      returning id::text, rule_set, version, rules::text as rules, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, created_by`;
    return toSnapshot(row!);
  });
}

/** The latest snapshot of a rule set, or `undefined` when it has none. */
export async function latestSnapshot(sql: Sql | TransactionSql, ruleSet: string): Promise<Snapshot | undefined> {
  const [row] = await sql<SnapshotRow[]>`
    select id::text, rule_set, version, rules::text as rules, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, created_by
    from rule_set_snapshots where rule_set = ${ruleSet}
    order by version desc limit 1`;
  return row ? toSnapshot(row) : undefined;
}

/** A snapshot by id; `NotFoundError` when it does not exist or belongs to another rule set. */
export async function snapshotById(sql: Sql | TransactionSql, ruleSet: string, id: string): Promise<Snapshot> {
  const [row] = await sql<SnapshotRow[]>`
    select id::text, rule_set, version, rules::text as rules, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, created_by
    from rule_set_snapshots where id = ${id} and rule_set = ${ruleSet}`;
  if (!row) throw new NotFoundError(`snapshot of rule set ${ruleSet}`, id);
  return toSnapshot(row);
}

/** The snapshot a candidate follows: the latest version of its set below the candidate's. */
export async function previousSnapshot(sql: Sql | TransactionSql, candidate: Snapshot): Promise<Snapshot | undefined> {
  const [row] = await sql<SnapshotRow[]>`
    select id::text, rule_set, version, rules::text as rules, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, created_by
    from rule_set_snapshots where rule_set = ${candidate.ruleSet} and version < ${candidate.version}
    order by version desc limit 1`;
  return row ? toSnapshot(row) : undefined;
}
