import { describe, expect, it } from 'vitest';
import { InvalidEventError } from '../errors.ts';
import { assertRoutingKey, assertTopicPattern, topicMatches, topicRegex } from './topic.ts';

describe('topic patterns', () => {
  const keys = ['case', 'case.opened', 'case.opened.late', 'cases.opened', 'rule.failed', 'rule.x.failed', 'rule.x.y.failed', 'rule.failed.x', 'a-b.c_d', 'x'];
  const patterns = ['#', '*', 'case.*', 'case.#', '#.opened', '*.opened', 'rule.#.failed', 'rule.*.failed', '#.x.#', 'a-b.*', '*.*.*', 'case'];

  it('the regex used by the PostgreSQL bus agrees with word-by-word topic matching on every pair', () => {
    for (const pattern of patterns) {
      const re = new RegExp(topicRegex([pattern]));
      for (const key of keys) expect([pattern, key, re.test(`.${key}`)]).toEqual([pattern, key, topicMatches(pattern, key)]);
    }
  });

  it('matches AMQP topic semantics on the classic examples', () => {
    expect(topicMatches('case.*', 'case.opened')).toBe(true);
    expect(topicMatches('case.*', 'case.opened.late')).toBe(false);
    expect(topicMatches('case.*', 'case')).toBe(false);
    expect(topicMatches('#', 'anything.at.all')).toBe(true);
    expect(topicMatches('rule.#.failed', 'rule.failed')).toBe(true);
    expect(topicMatches('case.#', 'case')).toBe(true);
  });

  it('combines several patterns into one alternation', () => {
    const re = new RegExp(topicRegex(['case.*', 'placement.started']));
    expect(re.test('.case.closed')).toBe(true);
    expect(re.test('.placement.started')).toBe(true);
    expect(re.test('.placement.ended')).toBe(false);
  });

  it('remembers valid keys only: a bad key is refused however many good ones were checked before it', () => {
    // More distinct valid keys than the memo holds, so it fills and starts over on the way.
    for (let i = 0; i < 3000; i++) assertRoutingKey(`case.k${i}`);
    for (const bad of ['', 'case..opened', 'case opened', 'case.*']) expect(() => assertRoutingKey(bad, 'routingKey')).toThrow(InvalidEventError);
    expect(() => assertRoutingKey(42)).toThrow(/non-empty string/);
    expect(() => assertRoutingKey('case.k2999')).not.toThrow();
  });

  it('refuses malformed keys and patterns, naming them', () => {
    for (const bad of ['', 'case..opened', '.case', 'case.', 'case opened', 'case.*', 'ca#se']) expect(() => assertRoutingKey(bad)).toThrow(InvalidEventError);
    for (const bad of ['', 'case..*', 'case.**', 'ca*', 'a.#b', 'a b']) expect(() => assertTopicPattern(bad)).toThrow(InvalidEventError);
    expect(() => assertRoutingKey('x'.repeat(256))).toThrow(/255 bytes/);
    expect(() => topicRegex([])).toThrow(InvalidEventError);
    expect(() => assertRoutingKey('case opened')).toThrow(/"case opened"/);
  });
});
