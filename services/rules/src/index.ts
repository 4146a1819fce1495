/**
 * @craig/svc-rules: evaluates case, placement and safety events against the active rule-set
 * snapshot (one `rule_evaluations` row and one `rule.evaluated` per event), keeps rule sets as
 * insert-only versioned snapshots with promotion previews, and archives then prunes
 * `rule_evaluations` (`@craig/retention`) past the hot window.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type RulesArchiveDeps, type RulesDeps, type RulesService } from './service.ts';
/** The database's migration sets (`mq`, `retention`, then `rules`). */
export { rulesMigrationSets, RULES_MIGRATIONS } from './migrations.ts';
/** The archive spec (insert-only, `evaluated_at`), and the outbox hook announcing each archived batch. */
export { RULE_EVALUATIONS_SPEC, RULES_ARCHIVE_SPECS, ARCHIVE_BATCH_EVENT, announceArchivedBatch } from './archive-specs.ts';
/** The evaluate consumer (`rules.evaluate` on `case.*`, `placement.*`, `safety.*`). */
export { startEvaluateConsumer, EVALUATE_CONSUMER, EVALUATE_PATTERNS, type EvaluateConsumerOptions } from './consumers.ts';
/** The rule language: validation and pure, deterministic evaluation. */
export {
  parseRules,
  evaluate,
  eventTypeMatches,
  conditionHolds,
  MAX_RULES,
  MAX_PATH_SEGMENTS,
  MAX_IN_VALUES,
  MAX_STRING_VALUE,
  MAX_RULES_BYTES,
  type Rule,
  type RuleCondition,
  type Outcome,
  type Scalar,
  type Evaluation,
} from './rule-language.ts';
/** Rule-set snapshots (the active set is the latest snapshot of `default`). */
export { createSnapshot, latestSnapshot, snapshotById, previousSnapshot, ACTIVE_RULE_SET, type Snapshot } from './snapshot-store.ts';
/** Promotion previews: a candidate snapshot replayed over recent evaluations' inputs. */
export { createPreview, MAX_PREVIEW_SAMPLE, DEFAULT_PREVIEW_SAMPLE, MAX_PREVIEW_EXAMPLES, type Preview, type PreviewSummary } from './preview.ts';
/** Evaluations: the consumer's write and the read API's query. */
export { recordEvaluation, listEvaluations, RULE_EVALUATED_EVENT, MAX_EVALUATION_PAGE, DEFAULT_EVALUATION_PAGE, type EvaluationRow, type EvaluationQuery, type RuleEvaluatedPayload } from './evaluation-store.ts';
/** The service's errors, each with a stable `code`. */
export { RulesError, InvalidQueryError, InvalidBodyError, InvalidRuleSetError, NotFoundError } from './errors.ts';
/** What the devstack seeds and drives. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { RULES_EVENTS } from './events.ts';
