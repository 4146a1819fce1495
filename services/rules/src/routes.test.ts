import { describe, expect, it } from 'vitest';
import { RULE_EVALUATIONS_SPEC, RULES_ARCHIVE_SPECS } from './archive-specs.ts';
import { InvalidBodyError, InvalidQueryError } from './errors.ts';
import { parseEvaluationQuery, parseLimit, parsePreviewBody, parseRuleSetName, parseSnapshotBody } from './routes.ts';

const refusal = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
};

describe('parseEvaluationQuery', () => {
  it('accepts the documented forms', () => {
    expect(parseEvaluationQuery({})).toEqual({ limit: 100 });
    expect(parseEvaluationQuery({ eventType: 'safety.reported', outcome: 'block', since: '2026-01-31', limit: '500' })).toEqual({ eventType: 'safety.reported', outcome: 'block', since: new Date('2026-01-31T00:00:00Z'), limit: 500 });
    expect(parseEvaluationQuery({ since: '2026-01-31T12:00:00.123456+02:00' }).since).toEqual(new Date('2026-01-31T10:00:00.123Z'));
  });

  it('names the parameter and the value it refuses', () => {
    expect(refusal(() => parseEvaluationQuery({ since: '1700000000' }))).toMatchObject({ code: 'invalid_request', parameter: 'since', value: '1700000000' });
    expect(refusal(() => parseEvaluationQuery({ outcome: 'PASS' }))).toMatchObject({ parameter: 'outcome', value: 'PASS' });
    expect(refusal(() => parseEvaluationQuery({ eventType: 'a'.repeat(256) }))).toMatchObject({ parameter: 'eventType' });
    expect(refusal(() => parseEvaluationQuery({ eventType: '#' }))).toBeInstanceOf(InvalidQueryError);
    expect(() => parseLimit({ limit: '1e2' })).toThrow('query parameter limit="1e2" must be a whole number from 1 to 500');
  });
});

describe('request bodies', () => {
  it('rule-set names follow the schema check', () => {
    expect(parseRuleSetName('default')).toBe('default');
    expect(parseRuleSetName('demo-candidate_2')).toBe('demo-candidate_2');
    for (const bad of ['', 'Default', '-x', 'a'.repeat(64), 'a.b', 7]) expect(refusal(() => parseRuleSetName(bad))).toMatchObject({ code: 'invalid_request', field: 'name', value: bad });
  });

  it('a snapshot body holds rules and an optional createdBy', () => {
    expect(parseSnapshotBody({ rules: [] })).toEqual({ rules: [], createdBy: 'admin' });
    expect(parseSnapshotBody({ rules: [], createdBy: 'alice' }).createdBy).toBe('alice');
    expect(refusal(() => parseSnapshotBody({ rules: [], createdBy: 'a\nb' }))).toMatchObject({ field: 'createdBy', value: 'a\nb' });
    expect(refusal(() => parseSnapshotBody(null))).toBeInstanceOf(InvalidBodyError);
    expect(refusal(() => parseSnapshotBody({ rules: [{ name: 'x' }] }))).toMatchObject({ field: 'rules[0].when', ruleIndex: 0 });
  });

  it('a preview body holds a snapshot id (number or digits) and a bounded sample', () => {
    expect(parsePreviewBody({ snapshotId: 3 })).toEqual({ snapshotId: '3', sample: 1000 });
    expect(parsePreviewBody({ snapshotId: '123456789012345678', sample: 10_000 })).toEqual({ snapshotId: '123456789012345678', sample: 10_000 });
    expect(refusal(() => parsePreviewBody({ snapshotId: '0123' }))).toMatchObject({ field: 'snapshotId', value: '0123' });
    expect(refusal(() => parsePreviewBody({ snapshotId: 1, sample: 0 }))).toMatchObject({ field: 'sample', value: 0 });
    expect(refusal(() => parsePreviewBody({ snapshotId: 1, dryRun: true }))).toMatchObject({ field: 'dryRun', value: true });
  });
});

describe('the archive wiring', () => {
  it('archives rule_evaluations alone, by evaluated_at, insert-only, with nothing mutable and no guard', () => {
    expect(RULES_ARCHIVE_SPECS).toEqual([RULE_EVALUATIONS_SPEC]);
    expect(RULE_EVALUATIONS_SPEC).toMatchObject({ table: 'rule_evaluations', keyColumn: 'id', timestampColumn: 'evaluated_at', fixpoint: { kind: 'insert_only' }, guards: [], mutableColumns: [] });
  });
});

// Found by the HTTP fuzzer: POST /v1/rule-sets/0-z/snapshots with a 96,511-deep [[…]] body answered
// 500: the refusal's message was JSON.stringify of the whole value, which overflowed the stack.
describe('a deep body', () => {
  it('is refused as a body that is no object, with a bounded message and value', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    const e = refusal(() => parseSnapshotBody(deep)) as InvalidBodyError;
    expect(e).toBeInstanceOf(InvalidBodyError);
    expect(e.message.length).toBeLessThan(400);
    expect(typeof e.value).toBe('string');
    const nested = refusal(() => parseSnapshotBody({ rules: deep })) as Error & { code: string };
    expect(nested.code).toBe('invalid_request');
    expect(nested.message.length).toBeLessThan(500);
  });
});
