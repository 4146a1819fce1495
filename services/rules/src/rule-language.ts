// The rule language: a snapshot's `rules` is an array of
//   { name, when: { eventType, field, op, value }, outcome: 'flag' | 'block' }
// evaluated in TypeScript, deterministically (no clock, no randomness, no I/O) and within fixed
// bounds (at most MAX_RULES rules, paths of at most MAX_PATH_SEGMENTS words, `in` lists of at
// most MAX_IN_VALUES scalars; no regular expression is built from input).
import { z } from 'zod';
import { InvalidRuleSetError } from './errors.ts';

/** Most rules one snapshot may hold. */
export const MAX_RULES = 200;
/** Most words in a `field` path. */
export const MAX_PATH_SEGMENTS = 8;
/** Most values in an `in` list. */
export const MAX_IN_VALUES = 100;
/** Longest string a rule compares against. */
export const MAX_STRING_VALUE = 256;
/** Largest rule set, as compact JSON (the schema's check is a looser backstop on the jsonb text). */
export const MAX_RULES_BYTES = 256 * 1024;

export type Scalar = string | number | boolean | null;
export type Outcome = 'pass' | 'flag' | 'block';

export type RuleCondition =
  | { readonly eventType: string; readonly field: string; readonly op: 'eq' | 'neq'; readonly value: Scalar }
  | { readonly eventType: string; readonly field: string; readonly op: 'gt' | 'lt'; readonly value: number | string }
  | { readonly eventType: string; readonly field: string; readonly op: 'in'; readonly value: readonly Scalar[] }
  | { readonly eventType: string; readonly field: string; readonly op: 'exists'; readonly value: boolean };

export interface Rule {
  readonly name: string;
  readonly when: RuleCondition;
  readonly outcome: 'flag' | 'block';
}

export interface Evaluation {
  /** `block` when any blocking rule matched, else `flag` when any rule matched, else `pass`. */
  readonly outcome: Outcome;
  /** Names of the matched rules, in rule order. */
  readonly matchedRules: readonly string[];
}

const WORD = /^[A-Za-z0-9_-]+$/;
const RULE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const FIELD = new RegExp(`^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+){0,${MAX_PATH_SEGMENTS - 1}}$`);

/** An event type or a topic pattern: dot-separated words, `*` (one word) or `#` (zero or more). */
function isTopicPattern(value: string): boolean {
  return Buffer.byteLength(value) <= 255 && value.split('.').every((w) => w === '*' || w === '#' || WORD.test(w));
}

const SCALAR_TEXT = `a string of at most ${MAX_STRING_VALUE} characters, a finite number, a boolean or null`;
const scalar = z.union([z.string().max(MAX_STRING_VALUE), z.number().finite(), z.boolean(), z.null()], { error: `must be ${SCALAR_TEXT}` });
const common = {
  eventType: z.string().refine(isTopicPattern, 'must be an event type or a topic pattern: dot-separated words of letters, digits, "_" or "-", "*" or "#" (at most 255 bytes)'),
  field: z.string().regex(FIELD, `must be a dot path of 1 to ${MAX_PATH_SEGMENTS} words of letters, digits, "_" or "-"`),
};
const condition = z.discriminatedUnion('op', [
  z.strictObject({ ...common, op: z.enum(['eq', 'neq']), value: scalar }),
  z.strictObject({ ...common, op: z.enum(['gt', 'lt']), value: z.union([z.number().finite(), z.string().max(MAX_STRING_VALUE)], { error: `must be a finite number or a string of at most ${MAX_STRING_VALUE} characters` }) }),
  z.strictObject({ ...common, op: z.literal('in'), value: z.array(scalar, { error: `must be an array of 1 to ${MAX_IN_VALUES} values, each ${SCALAR_TEXT}` }).min(1, { error: `must list 1 to ${MAX_IN_VALUES} values` }).max(MAX_IN_VALUES, { error: `must list 1 to ${MAX_IN_VALUES} values` }) }),
  z.strictObject({ ...common, op: z.literal('exists'), value: z.boolean({ error: 'must be true (the field is present and not null) or false' }) }),
]);
const rule = z.strictObject({
  name: z.string().regex(RULE_NAME, 'must be 1 to 64 letters, digits, "_", "." or "-"'),
  when: condition,
  outcome: z.enum(['flag', 'block'], { error: 'must be flag or block' }),
}, { error: 'must be a rule: { name, when: { eventType, field, op, value }, outcome }' });
const ruleArray = z.array(rule).max(MAX_RULES);

function pathText(path: readonly PropertyKey[]): string {
  let text = 'rules';
  for (const part of path) text += typeof part === 'number' ? `[${part}]` : `.${String(part)}`;
  return text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

/**
 * Validate a rule array (as a request body or a stored snapshot carries it). Throws
 * `InvalidRuleSetError` naming the first problem: its path (`rules[2].when.op`), the rule's index
 * and the offending value. Rule names must be unique within the set.
 */
export function parseRules(input: unknown): readonly Rule[] {
  const parsed = ruleArray.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const ruleIndex = typeof issue.path[0] === 'number' ? issue.path[0] : undefined;
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0]!;
      throw new InvalidRuleSetError(pathText([...issue.path, key]), ruleIndex, valueAt(input, [...issue.path, key]), `is not a field of a rule (known: ${knownKeys(issue.path)})`);
    }
    let message = issue.message;
    if (issue.path.length > 0 && issue.path.at(-1) === 'op') message = 'must be one of eq, neq, gt, lt, in, exists';
    if (issue.path.length === 0 && !Array.isArray(input)) message = 'must be an array of rules';
    if (issue.path.length === 0 && Array.isArray(input)) message = `must hold at most ${MAX_RULES} rules`;
    throw new InvalidRuleSetError(pathText(issue.path), ruleIndex, valueAt(input, issue.path), message);
  }
  const bytes = Buffer.byteLength(JSON.stringify(parsed.data));
  if (bytes > MAX_RULES_BYTES) throw new InvalidRuleSetError('rules', undefined, `[${parsed.data.length} rules, ${bytes} bytes]`, `must be at most ${MAX_RULES_BYTES} bytes as JSON`);
  const seen = new Map<string, number>();
  for (const [i, r] of parsed.data.entries()) {
    const first = seen.get(r.name);
    if (first !== undefined) throw new InvalidRuleSetError(`rules[${i}].name`, i, r.name, `repeats the name of rules[${first}]`);
    seen.set(r.name, i);
  }
  return Object.freeze(parsed.data.map((r) => Object.freeze({ ...r, when: Object.freeze(r.when) })));
}

function knownKeys(path: readonly PropertyKey[]): string {
  return path.at(-1) === 'when' ? 'eventType, field, op, value' : 'name, when, outcome';
}

/** Does the event type match the pattern under topic-exchange rules (`*` one word, `#` zero or more)? O(words²), no backtracking. */
export function eventTypeMatches(pattern: string, eventType: string): boolean {
  const p = pattern.split('.');
  const k = eventType.split('.');
  // reachable[j]: the pattern's first i words can match the key's first j words.
  let reachable = new Array<boolean>(k.length + 1).fill(false);
  reachable[0] = true;
  for (const word of p) {
    const next = new Array<boolean>(k.length + 1).fill(false);
    for (let j = 0; j <= k.length; j++) {
      if (word === '#') {
        // Zero words, or one more word after a reachable prefix.
        next[j] = reachable[j]! || (j > 0 && next[j - 1]!);
      } else if (j > 0 && reachable[j - 1]) {
        next[j] = word === '*' || word === k[j - 1];
      }
    }
    reachable = next;
  }
  return reachable[k.length]!;
}

const MISSING = Symbol('missing');

/** The value at a dot path of the payload: object keys, or array indexes as whole numbers; `MISSING` when absent. */
export function resolveField(payload: unknown, field: string): unknown {
  let current: unknown = payload;
  for (const segment of field.split('.')) {
    if (Array.isArray(current)) {
      if (!/^\d{1,6}$/.test(segment)) return MISSING;
      const index = Number(segment);
      if (index >= current.length) return MISSING;
      current = current[index];
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, segment)) return MISSING;
      current = (current as Record<string, unknown>)[segment];
    } else {
      return MISSING;
    }
  }
  return current;
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * Does the condition hold for this payload? A comparison (`eq`, `neq`, `gt`, `lt`, `in`) never
 * matches a missing field, nor an object or array value; only `exists` speaks about absence
 * (`exists: true` holds for a present, non-null field; `exists: false` for a missing or null one).
 * `gt`/`lt` compare numbers with numbers and strings with strings (code units: ISO 8601 UTC
 * timestamps order correctly); mixed types never match.
 */
export function conditionHolds(when: RuleCondition, payload: unknown): boolean {
  const value = resolveField(payload, when.field);
  if (when.op === 'exists') return (value !== MISSING && value !== null) === when.value;
  if (value === MISSING || !isScalar(value)) return false;
  switch (when.op) {
    case 'eq':
      return value === when.value;
    case 'neq':
      return value !== when.value;
    case 'in':
      return when.value.includes(value);
    case 'gt':
    case 'lt': {
      if (typeof value !== typeof when.value || (typeof value !== 'number' && typeof value !== 'string')) return false;
      return when.op === 'gt' ? value > when.value : value < when.value;
    }
  }
}

/** Evaluate an event against a rule set: pure and deterministic. */
export function evaluate(rules: readonly Rule[], event: { readonly eventType: string; readonly payload: unknown }): Evaluation {
  const matchedRules: string[] = [];
  let outcome: Outcome = 'pass';
  for (const r of rules) {
    if (!eventTypeMatches(r.when.eventType, event.eventType) || !conditionHolds(r.when, event.payload)) continue;
    matchedRules.push(r.name);
    if (r.outcome === 'block') outcome = 'block';
    else if (outcome === 'pass') outcome = 'flag';
  }
  return { outcome, matchedRules };
}
