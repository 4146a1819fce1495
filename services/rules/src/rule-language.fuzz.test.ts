// The rule language under random input (fast-check): `parseRules` answers frozen rules or a typed
// InvalidRuleSetError, never another exception, in bounded time and whatever the depth; `evaluate`
// of parsed rules never throws and is deterministic.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidRuleSetError } from './errors.ts';
import { evaluate, MAX_RULES, parseRules, type Rule } from './rule-language.ts';

const RUNS = Number(process.env.CRAIG_FUZZ_RUNS ?? 1000);
const seed = (n: number) => (process.env.CRAIG_FUZZ_SEED === undefined ? n : Number(process.env.CRAIG_FUZZ_SEED));

const hostile = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.constantFrom('x'.repeat(300), '*', '#', '', '.', 'a..b', '__proto__', 'constructor'));
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof({ arbitrary: a, weight: 5 }, { arbitrary: hostile, weight: 1 });
const when = fc.record(
  {
    eventType: maybe(fc.constantFrom('case.opened', 'case.*', '#', '*.*', 'a.#.b', 'x'.repeat(256))),
    field: maybe(fc.constantFrom('caseId', 'a.b', 'a.0.b', '1.2.3.4.5.6.7.8', '1.2.3.4.5.6.7.8.9')),
    op: maybe(fc.constantFrom('eq', 'neq', 'gt', 'lt', 'in', 'exists')),
    value: fc.oneof(hostile, fc.array(hostile, { maxLength: 102 }), fc.array(fc.array(hostile, { maxLength: 2 }), { maxLength: 3 })),
  },
  { requiredKeys: [] },
);
const rule = fc.record({ name: maybe(fc.stringMatching(/^[a-z]{1,4}$/)), when: fc.oneof(when, hostile), outcome: maybe(fc.constantFrom('flag', 'block')) }, { requiredKeys: [] });
const deep = fc.integer({ min: 1, max: 100_000 }).map((d) => JSON.parse(`${'['.repeat(d)}${']'.repeat(d)}`) as unknown);
const input = fc.oneof(
  { arbitrary: fc.array(rule, { maxLength: 8 }), weight: 6 },
  { arbitrary: fc.jsonValue({ maxDepth: 5 }), weight: 2 },
  { arbitrary: fc.anything({ maxDepth: 3 }), weight: 1 },
  { arbitrary: deep, weight: 1 },
  { arbitrary: deep.map((d) => [{ name: 'a', when: { eventType: '#', field: 'a', op: 'in', value: d }, outcome: 'flag' }]), weight: 1 },
  { arbitrary: fc.constant(Array.from({ length: 10_000 }, (_, i) => ({ name: `r${i}`, when: { eventType: '#', field: 'a', op: 'exists', value: true }, outcome: 'flag' }))), weight: 1 },
);
const payload = fc.oneof(fc.jsonValue({ maxDepth: 4 }), deep, fc.record({ caseId: hostile, a: fc.oneof(hostile, fc.record({ b: hostile })), n: hostile, kind: hostile, severity: hostile }));

describe('the rule language under random input', () => {
  it(`parseRules: frozen rules or InvalidRuleSetError naming the path, never another exception, in bounded time (${RUNS} cases)`, () => {
    fc.assert(
      fc.property(input, (value) => {
        const started = performance.now();
        let rules: readonly Rule[] | undefined;
        try {
          rules = parseRules(value);
        } catch (error) {
          if (!(error instanceof InvalidRuleSetError)) throw new Error(`threw ${String(error)}`, { cause: error });
          expect(error.code).toBe('invalid_request');
          expect(error.field).toMatch(/^rules/);
          expect(error.message.length).toBeLessThan(1000);
        }
        expect(performance.now() - started).toBeLessThan(500);
        if (rules) {
          expect(Object.isFrozen(rules)).toBe(true);
          expect(rules.length).toBeLessThanOrEqual(MAX_RULES);
          expect(new Set(rules.map((r) => r.name)).size).toBe(rules.length);
          for (const r of rules) expect(Object.isFrozen(r) && Object.isFrozen(r.when)).toBe(true);
        }
      }),
      { numRuns: RUNS, seed: seed(20_261_002) },
    );
  });

  it(`evaluate: never throws on any event, and the same event gives the same answer (${RUNS} cases)`, () => {
    const parsed = fc.array(rule, { maxLength: 8 }).map((v) => {
      try {
        return parseRules(v);
      } catch {
        return parseRules([]);
      }
    });
    fc.assert(
      fc.property(parsed, fc.oneof(fc.constantFrom('case.opened', 'placement.started', 'safety.reported', ''), fc.string({ maxLength: 300 })), payload, (rules, eventType, p) => {
        const first = evaluate(rules, { eventType, payload: p });
        expect(evaluate(rules, { eventType, payload: p })).toEqual(first);
        expect(['pass', 'flag', 'block']).toContain(first.outcome);
      }),
      { numRuns: RUNS, seed: seed(20_261_003) },
    );
  });
});
