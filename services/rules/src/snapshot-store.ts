import type { Sql, TransactionSql } from '@craig/db';
import { NotFoundError, RulesError } from './errors.ts';
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

// Concurrent posts to one set race for the same next version; the unique key refuses all but
// one, and the others retry with the next number. Each round one writer wins, so this bounds
// how many simultaneous writers of one set succeed without a 503.
const MAX_VERSION_ATTEMPTS = 10;

/**
 * Insert the next version of a rule set (validated rules). Versions are gapless and unique:
 * a concurrent post that took the same number is retried with the next one.
 */
export async function createSnapshot(sql: Sql, input: { readonly ruleSet: string; readonly rules: readonly Rule[]; readonly createdBy: string }): Promise<Snapshot> {
  const rulesJson = JSON.stringify(input.rules);
  for (let attempt = 1; ; attempt++) {
    try {
      const [row] = await sql<SnapshotRow[]>`
        insert into rule_set_snapshots (rule_set, version, rules, created_by)
        select ${input.ruleSet}, coalesce(max(version), 0) + 1, ${rulesJson}::text::jsonb, ${input.createdBy}
        from rule_set_snapshots where rule_set = ${input.ruleSet}
        returning id::text, rule_set, version, rules::text as rules, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at, created_by`;
      return toSnapshot(row!);
    } catch (error) {
      if ((error as { constraint_name?: string }).constraint_name !== 'rule_set_snapshots_version') throw error;
      if (attempt >= MAX_VERSION_ATTEMPTS) {
        throw new RulesError('snapshot_version_conflict', `rule set ${JSON.stringify(input.ruleSet)}: ${attempt} concurrent posts took the next version first; post again`, { retryable: true, cause: error });
      }
    }
  }
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
