import { describe, expect, it } from 'vitest';
import { InvalidRuleSetError } from './errors.ts';
import { conditionHolds, evaluate, eventTypeMatches, MAX_IN_VALUES, MAX_RULES, MAX_RULES_BYTES, parseRules, resolveField, type RuleCondition } from './rule-language.ts';

const when = (op: RuleCondition['op'], value: unknown, field = 'x'): RuleCondition => ({ eventType: '#', field, op, value }) as RuleCondition;

describe('operators', () => {
  const payload = { x: 5, s: 'b', t: '2026-03-01T00:00:00Z', n: null, o: { deep: [10, { y: 'yes' }] }, f: false };

  it('eq and neq compare scalars exactly, types included', () => {
    expect(conditionHolds(when('eq', 5), payload)).toBe(true);
    expect(conditionHolds(when('eq', '5'), payload)).toBe(false);
    expect(conditionHolds(when('eq', null, 'n'), payload)).toBe(true);
    expect(conditionHolds(when('eq', false, 'f'), payload)).toBe(true);
    expect(conditionHolds(when('neq', 4), payload)).toBe(true);
    expect(conditionHolds(when('neq', 5), payload)).toBe(false);
    expect(conditionHolds(when('neq', 'a', 'n'), payload)).toBe(true);
  });

  it('gt and lt order numbers with numbers and strings with strings, never across types', () => {
    expect(conditionHolds(when('gt', 4), payload)).toBe(true);
    expect(conditionHolds(when('gt', 5), payload)).toBe(false);
    expect(conditionHolds(when('lt', 6), payload)).toBe(true);
    expect(conditionHolds(when('lt', 5), payload)).toBe(false);
    expect(conditionHolds(when('gt', 'a', 's'), payload)).toBe(true);
    expect(conditionHolds(when('lt', '2026-04-01T00:00:00Z', 't'), payload)).toBe(true);
    expect(conditionHolds(when('gt', '2026-04-01T00:00:00Z', 't'), payload)).toBe(false);
    expect(conditionHolds(when('gt', '4'), payload)).toBe(false);
    expect(conditionHolds(when('lt', 10, 's'), payload)).toBe(false);
    expect(conditionHolds(when('gt', 0, 'n'), payload)).toBe(false);
  });

  it('in matches a scalar listed by exact value', () => {
    expect(conditionHolds(when('in', [1, 5]), payload)).toBe(true);
    expect(conditionHolds(when('in', ['5']), payload)).toBe(false);
    expect(conditionHolds(when('in', [null], 'n'), payload)).toBe(true);
    expect(conditionHolds(when('in', ['a', 'c'], 's'), payload)).toBe(false);
  });

  it('exists: true for a present non-null field, false for a missing or null one', () => {
    expect(conditionHolds(when('exists', true), payload)).toBe(true);
    expect(conditionHolds(when('exists', true, 'f'), payload)).toBe(true);
    expect(conditionHolds(when('exists', true, 'n'), payload)).toBe(false);
    expect(conditionHolds(when('exists', false, 'n'), payload)).toBe(true);
    expect(conditionHolds(when('exists', false, 'missing'), payload)).toBe(true);
    expect(conditionHolds(when('exists', false), payload)).toBe(false);
    expect(conditionHolds(when('exists', true, 'x.y'), payload)).toBe(false);
  });

  it('a comparison never matches a missing field or an object or array value', () => {
    for (const op of ['eq', 'neq', 'gt', 'lt'] as const) expect(conditionHolds(when(op, 1, 'missing'), payload)).toBe(false);
    expect(conditionHolds(when('in', [1], 'missing'), payload)).toBe(false);
    expect(conditionHolds(when('neq', 1, 'o'), payload)).toBe(false);
    expect(conditionHolds(when('neq', 1, 'o.deep'), payload)).toBe(false);
    expect(conditionHolds(when('eq', 1), 'not an object')).toBe(false);
    expect(conditionHolds(when('exists', false), null)).toBe(true);
  });

  it('dot paths walk objects and arrays (whole-number indexes), never the prototype', () => {
    expect(resolveField(payload, 'o.deep.0')).toBe(10);
    expect(resolveField(payload, 'o.deep.1.y')).toBe('yes');
    expect(conditionHolds(when('eq', 'yes', 'o.deep.1.y'), payload)).toBe(true);
    expect(conditionHolds(when('exists', true, 'o.deep.2'), payload)).toBe(false);
    expect(conditionHolds(when('exists', true, 'o.deep.length'), payload)).toBe(false);
    expect(conditionHolds(when('exists', true, 'constructor'), payload)).toBe(false);
    expect(conditionHolds(when('exists', true, 'o.toString'), payload)).toBe(false);
  });
});

describe('event type patterns', () => {
  it.each([
    ['case.opened', 'case.opened', true],
    ['case.opened', 'case.closed', false],
    ['case.*', 'case.opened', true],
    ['case.*', 'case', false],
    ['case.*', 'case.opened.late', false],
    ['case.#', 'case', true],
    ['case.#', 'case.opened.late', true],
    ['#', 'safety.reported', true],
    ['#.reported', 'safety.reported', true],
    ['*.reported', 'case.opened', false],
    ['a.#.c', 'a.c', true],
    ['a.#.c', 'a.b.b.c', true],
    ['a.#.c', 'a.b.b.d', false],
    ['#.#.#', 'x', true],
  ])('%s against %s: %s', (pattern, eventType, expected) => {
    expect(eventTypeMatches(pattern, eventType)).toBe(expected);
  });

  it('stays fast on adversarial patterns (no backtracking)', () => {
    const pattern = Array.from({ length: 60 }, () => '#').join('.') + '.z';
    const key = Array.from({ length: 60 }, () => 'a').join('.');
    const started = performance.now();
    expect(eventTypeMatches(pattern, key)).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('evaluate', () => {
  const rules = parseRules([
    { name: 'high', when: { eventType: 'safety.reported', field: 'severity', op: 'in', value: ['high', 'critical'] }, outcome: 'flag' },
    { name: 'closed', when: { eventType: 'placement.*', field: 'caseStatus', op: 'eq', value: 'closed' }, outcome: 'block' },
    { name: 'any-placement', when: { eventType: 'placement.#', field: 'placementId', op: 'exists', value: true }, outcome: 'flag' },
  ]);

  it('pass when nothing matches, flag for a flag rule, block when any blocking rule matches; matches listed in rule order', () => {
    expect(evaluate(rules, { eventType: 'case.opened', payload: { severity: 'high' } })).toEqual({ outcome: 'pass', matchedRules: [] });
    expect(evaluate(rules, { eventType: 'safety.reported', payload: { severity: 'critical' } })).toEqual({ outcome: 'flag', matchedRules: ['high'] });
    expect(evaluate(rules, { eventType: 'safety.reported', payload: { severity: 'low' } })).toEqual({ outcome: 'pass', matchedRules: [] });
    expect(evaluate(rules, { eventType: 'placement.started', payload: { placementId: 'p', caseStatus: 'open' } })).toEqual({ outcome: 'flag', matchedRules: ['any-placement'] });
    expect(evaluate(rules, { eventType: 'placement.started', payload: { placementId: 'p', caseStatus: 'closed' } })).toEqual({ outcome: 'block', matchedRules: ['closed', 'any-placement'] });
  });

  it('is deterministic: the same input gives the same answer', () => {
    const event = { eventType: 'placement.ended', payload: { placementId: 'p', caseStatus: 'closed' } };
    expect(new Set(Array.from({ length: 20 }, () => JSON.stringify(evaluate(rules, event)))).size).toBe(1);
    expect(evaluate([], event)).toEqual({ outcome: 'pass', matchedRules: [] });
  });
});

describe('parseRules refuses invalid rules, naming the rule, the path and the value', () => {
  const valid = { name: 'r', when: { eventType: 'case.*', field: 'a.b', op: 'eq', value: 1 }, outcome: 'flag' };
  const withWhen = (patch: Record<string, unknown>) => ({ ...valid, when: { ...valid.when, ...patch } });
  const refusal = (input: unknown): InvalidRuleSetError => {
    try {
      parseRules(input);
    } catch (error) {
      if (error instanceof InvalidRuleSetError) return error;
      throw error;
    }
    throw new Error('expected a refusal');
  };

  it('accepts every operator with its value type, and an empty set', () => {
    expect(parseRules([])).toEqual([]);
    const all = parseRules([
      { ...withWhen({ op: 'eq', value: null }), name: 'a' },
      { ...withWhen({ op: 'neq', value: 'x' }), name: 'b' },
      { ...withWhen({ op: 'gt', value: 1.5 }), name: 'c' },
      { ...withWhen({ op: 'lt', value: '2026-01-01' }), name: 'd' },
      { ...withWhen({ op: 'in', value: [1, 'x', true, null] }), name: 'e' },
      { ...withWhen({ op: 'exists', value: false }), name: 'f', outcome: 'block' },
    ]);
    expect(all.map((r) => r.when.op)).toEqual(['eq', 'neq', 'gt', 'lt', 'in', 'exists']);
    expect(Object.isFrozen(all)).toBe(true);
  });

  it.each([
    ['not an array', 'x', 'rules', undefined, 'x', 'must be an array of rules'],
    ['a rule that is not an object', [null], 'rules[0]', 0, null, 'must be a rule'],
    ['an unknown operator', [valid, withWhen({ op: 'like' })], 'rules[1].when.op', 1, 'like', 'must be one of eq, neq, gt, lt, in, exists'],
    ['a missing operator', [{ ...valid, when: { eventType: 'case.*', field: 'a', value: 1 } }], 'rules[0].when.op', 0, undefined, 'must be one of'],
    ['eq against an object', [withWhen({ value: { a: 1 } })], 'rules[0].when.value', 0, { a: 1 }, 'must be a string'],
    ['gt against a boolean', [withWhen({ op: 'gt', value: true })], 'rules[0].when.value', 0, true, 'must be a finite number or a string'],
    ['in with a non-array', [withWhen({ op: 'in', value: 'high' })], 'rules[0].when.value', 0, 'high', 'must be an array'],
    ['in with an empty list', [withWhen({ op: 'in', value: [] })], 'rules[0].when.value', 0, [], 'must list 1 to 100 values'],
    ['exists with a string', [withWhen({ op: 'exists', value: 'yes' })], 'rules[0].when.value', 0, 'yes', 'must be true'],
    ['a malformed event type', [withWhen({ eventType: 'case..opened' })], 'rules[0].when.eventType', 0, 'case..opened', 'must be an event type or a topic pattern'],
    ['a malformed field path', [withWhen({ field: 'a..b' })], 'rules[0].when.field', 0, 'a..b', 'must be a dot path'],
    ['a path too deep', [withWhen({ field: 'a.b.c.d.e.f.g.h.i' })], 'rules[0].when.field', 0, 'a.b.c.d.e.f.g.h.i', 'must be a dot path of 1 to 8 words'],
    ['a pass outcome', [{ ...valid, outcome: 'pass' }], 'rules[0].outcome', 0, 'pass', 'must be flag or block'],
    ['a bad name', [{ ...valid, name: 'has space' }], 'rules[0].name', 0, 'has space', 'must be 1 to 64'],
    ['an unknown rule field', [{ ...valid, priority: 1 }], 'rules[0].priority', 0, 1, 'is not a field of a rule'],
    ['an unknown condition field', [withWhen({ regex: '.*' })], 'rules[0].when.regex', 0, '.*', 'is not a field of a rule (known: eventType, field, op, value)'],
    ['a repeated name', [valid, { ...valid }], 'rules[1].name', 1, 'r', 'repeats the name of rules[0]'],
  ])('%s', (_label, input, field, ruleIndex, value, message) => {
    const error = refusal(input);
    expect(error).toMatchObject({ code: 'invalid_request', field, ruleIndex, value });
    expect(error.message).toContain(message);
    expect(error.message.startsWith(`${field}=`)).toBe(true);
  });

  it('bounds the set, the lists and the strings', () => {
    expect(refusal(Array.from({ length: MAX_RULES + 1 }, (_, i) => ({ ...valid, name: `r${i}` })))).toMatchObject({ field: 'rules', message: expect.stringContaining(`at most ${MAX_RULES} rules`) });
    expect(refusal([withWhen({ op: 'in', value: Array.from({ length: MAX_IN_VALUES + 1 }, (_, i) => i) })])).toMatchObject({ field: 'rules[0].when.value', ruleIndex: 0 });
    expect(refusal([withWhen({ value: 'x'.repeat(257) })])).toMatchObject({ field: 'rules[0].when.value' });
    const wide = Array.from({ length: MAX_RULES }, () => withWhen({ op: 'in', value: Array.from({ length: 10 }, () => 'z'.repeat(200)) })).map((r, i) => ({ ...r, name: `r${i}` }));
    expect(refusal(wide)).toMatchObject({ field: 'rules', ruleIndex: undefined, message: expect.stringContaining(`must be at most ${MAX_RULES_BYTES} bytes as JSON`) });
    // A huge offending value is carried truncated, never echoed whole.
    const big = refusal([withWhen({ value: { blob: 'y'.repeat(5000) } })]);
    expect(typeof big.value === 'string' && big.value.length < 1100).toBe(true);
  });
});

// Found by the rule-language fuzzer: an `in` whose value is a 100,000-deep array made parseRules
// throw RangeError (the refusal's message was JSON.stringify of the offending value).
describe('a deep value', () => {
  it('is refused as InvalidRuleSetError with a bounded message, not a stack overflow', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    const rules = [{ name: 'a', when: { eventType: '#', field: 'a', op: 'in', value: deep }, outcome: 'flag' }];
    let thrown: unknown;
    try {
      parseRules(rules);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidRuleSetError);
    expect((thrown as InvalidRuleSetError).field).toMatch(/^rules\[0\]\.when\.value/);
    expect((thrown as Error).message.length).toBeLessThan(500);
  });
});
