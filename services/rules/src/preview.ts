import type { Sql } from '@craig/db';
import { evaluate, type Outcome, type Rule } from './rule-language.ts';
import { previousSnapshot, snapshotById } from './snapshot-store.ts';

/** Most recent evaluations a preview replays (and its default). */
export const MAX_PREVIEW_SAMPLE = 10_000;
export const DEFAULT_PREVIEW_SAMPLE = 1_000;
/** Changed evaluations a preview lists as examples. */
export const MAX_PREVIEW_EXAMPLES = 20;
// Inputs are read in pages: a 10,000-row sample of large payloads never sits in memory at once.
const PAGE = 500;

type Counts = Record<Outcome, number>;

/** What a preview stores in `summary` and returns. */
export interface PreviewSummary {
  readonly ruleSet: string;
  readonly snapshotVersion: number;
  readonly comparedToVersion: number | null;
  /** Evaluations asked for, and how many existed. */
  readonly sample: number;
  readonly evaluated: number;
  /** Inputs whose outcome differs between the compared-to snapshot and the candidate. */
  readonly changed: number;
  /** `"pass->block": n`, for every transition seen. */
  readonly transitions: Record<string, number>;
  readonly baseline: Counts;
  readonly candidate: Counts;
  readonly examples: readonly { readonly evaluationId: string; readonly eventType: string; readonly from: Outcome; readonly to: Outcome }[];
}

export interface Preview {
  readonly id: string;
  readonly snapshotId: string;
  readonly comparedToSnapshotId: string | null;
  readonly summary: PreviewSummary;
  readonly createdAt: string;
}

/**
 * Replay the inputs of the last `sample` evaluations against a candidate snapshot and against
 * the snapshot it follows (the previous version of its set; none: every outcome `pass`), count
 * the outcomes that change, and store the comparison as a promotion preview. Deterministic for
 * a given set of evaluations: the rule language has no clock.
 */
export async function createPreview(sql: Sql, input: { readonly ruleSet: string; readonly snapshotId: string; readonly sample: number }): Promise<Preview> {
  const candidate = await snapshotById(sql, input.ruleSet, input.snapshotId);
  const baseline = await previousSnapshot(sql, candidate);
  const baselineRules: readonly Rule[] = baseline?.rules ?? [];
  const counts = { baseline: zero(), candidate: zero() };
  const transitions: Record<string, number> = {};
  const examples: { evaluationId: string; eventType: string; from: Outcome; to: Outcome }[] = [];
  let evaluated = 0;
  let changed = 0;
  let before: string | undefined;
  while (evaluated < input.sample) {
    const page = await sql<{ id: string; event_type: string; input: unknown }[]>`
      select id::text, event_type, input from rule_evaluations
      ${before === undefined ? sql`` : sql`where id < ${before}`}
      order by id desc limit ${Math.min(PAGE, input.sample - evaluated)}`;
    for (const row of page) {
      const event = { eventType: row.event_type, payload: row.input };
      const from = evaluate(baselineRules, event).outcome;
      const to = evaluate(candidate.rules, event).outcome;
      counts.baseline[from] += 1;
      counts.candidate[to] += 1;
      if (from !== to) {
        changed += 1;
        transitions[`${from}->${to}`] = (transitions[`${from}->${to}`] ?? 0) + 1;
        if (examples.length < MAX_PREVIEW_EXAMPLES) examples.push({ evaluationId: row.id, eventType: row.event_type, from, to });
      }
    }
    evaluated += page.length;
    if (page.length < PAGE || page.length === 0) break;
    before = page.at(-1)!.id;
  }
  const summary: PreviewSummary = {
    ruleSet: candidate.ruleSet,
    snapshotVersion: candidate.version,
    comparedToVersion: baseline?.version ?? null,
    sample: input.sample,
    evaluated,
    changed,
    transitions,
    baseline: counts.baseline,
    candidate: counts.candidate,
    examples,
  };
  const [row] = await sql<{ id: string; created_at: string }[]>`
    insert into rule_set_promotion_previews (snapshot_id, compared_to_snapshot_id, summary)
    values (${candidate.id}, ${baseline?.id ?? null}, ${JSON.stringify(summary)}::text::jsonb)
    returning id::text, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at`;
  return { id: row!.id, snapshotId: candidate.id, comparedToSnapshotId: baseline?.id ?? null, summary, createdAt: row!.created_at };
}

function zero(): Counts {
  return { pass: 0, flag: 0, block: 0 };
}
