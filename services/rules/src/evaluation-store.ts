import type { Sql, TransactionSql } from '@craig/db';
import { stageEvent, type EventEnvelope } from '@craig/mq';
import { RulesError } from './errors.ts';
import { RULES_EVENTS } from './events.ts';
import { evaluate, type Outcome } from './rule-language.ts';
import { ACTIVE_RULE_SET, latestSnapshot } from './snapshot-store.ts';

/** The event type each evaluation publishes. */
export const RULE_EVALUATED_EVENT = RULES_EVENTS.type('rule.evaluated');
/** Most rows one read of the evaluations API returns. */
export const MAX_EVALUATION_PAGE = 500;
/** Rows a read returns when `limit` is absent. */
export const DEFAULT_EVALUATION_PAGE = 100;
export const OUTCOMES: readonly Outcome[] = Object.freeze(['pass', 'flag', 'block']);

/** The payload of `rule.evaluated`. */
export interface RuleEvaluatedPayload {
  readonly evaluationId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly outcome: Outcome;
  readonly matchedRules: readonly string[];
  readonly ruleSet: string;
  readonly snapshotId: string;
  readonly snapshotVersion: number;
}

/**
 * Evaluate one event against the active snapshot (the latest of `default`), in the caller's
 * (inbox) transaction: the `rule_evaluations` row and the staged `rule.evaluated` exist exactly
 * when the event's inbox record does, so a duplicate delivery writes and publishes nothing.
 */
export async function recordEvaluation(tx: TransactionSql, event: EventEnvelope, body: string): Promise<RuleEvaluatedPayload> {
  const snapshot = await latestSnapshot(tx, ACTIVE_RULE_SET);
  // The schema ships version 1; a missing set is a broken database, retried then dead-lettered.
  if (!snapshot) throw new RulesError('no_active_rule_set', `rule set ${JSON.stringify(ACTIVE_RULE_SET)} has no snapshot`);
  const result = evaluate(snapshot.rules, { eventType: event.eventType, payload: event.payload });
  // The input is taken from the raw body by the database, not re-serialized from the decoded
  // envelope: jsonb keeps integers beyond 2^53 and decimal digits exactly, JSON.parse would not.
  const [row] = await tx<{ id: string }[]>`
    insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, matched_rules, input)
    select ${event.eventId}, ${event.eventType}, ${snapshot.id}, ${result.outcome}, ${result.matchedRules as string[]}::text[],
           coalesce(b -> 'payload', 'null'::jsonb)
    from (select ${body}::text::jsonb as b) as envelope
    returning id::text`;
  const payload: RuleEvaluatedPayload = {
    evaluationId: row!.id,
    eventId: event.eventId,
    eventType: event.eventType,
    outcome: result.outcome,
    matchedRules: result.matchedRules,
    ruleSet: snapshot.ruleSet,
    snapshotId: snapshot.id,
    snapshotVersion: snapshot.version,
  };
  await stageEvent(tx, { aggregateType: 'rule_evaluation', aggregateId: row!.id, eventType: RULE_EVALUATED_EVENT, payload });
  return payload;
}

/** One `rule_evaluations` row as the API returns it. */
export interface EvaluationRow {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly outcome: Outcome;
  readonly matchedRules: string[];
  readonly ruleSet: string;
  readonly snapshotId: string;
  readonly snapshotVersion: number;
  readonly input: unknown;
  readonly evaluatedAt: string;
}

export interface EvaluationQuery {
  readonly eventType?: string;
  readonly outcome?: Outcome;
  readonly since?: Date;
  readonly limit: number;
}

/** Evaluations, newest first (by `evaluated_at`, then id), at most `limit`. Only hot rows. */
export async function listEvaluations(sql: Sql, query: EvaluationQuery): Promise<EvaluationRow[]> {
  const rows = await sql<{ id: string; event_id: string; event_type: string; outcome: Outcome; matched_rules: string[]; rule_set: string; snapshot_id: string; version: number; input: unknown; evaluated_at: string }[]>`
    select e.id::text, e.event_id::text, e.event_type, e.outcome, e.matched_rules, s.rule_set, e.snapshot_id::text, s.version, e.input,
           to_char(e.evaluated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as evaluated_at
    from rule_evaluations e join rule_set_snapshots s on s.id = e.snapshot_id
    where true
      ${query.eventType === undefined ? sql`` : sql`and e.event_type = ${query.eventType}`}
      ${query.outcome === undefined ? sql`` : sql`and e.outcome = ${query.outcome}`}
      ${query.since === undefined ? sql`` : sql`and e.evaluated_at >= ${query.since}`}
    order by e.evaluated_at desc, e.id desc
    limit ${query.limit}`;
  return rows.map((r) => ({
    id: r.id,
    eventId: r.event_id,
    eventType: r.event_type,
    outcome: r.outcome,
    matchedRules: r.matched_rules,
    ruleSet: r.rule_set,
    snapshotId: r.snapshot_id,
    snapshotVersion: r.version,
    input: r.input,
    evaluatedAt: r.evaluated_at,
  }));
}
