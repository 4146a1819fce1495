import { InvalidEventError } from '../errors.ts';

// Routing keys and binding patterns follow AMQP topic-exchange rules, so both transports route
// identically: a key is dot-separated words; in a pattern `*` is exactly one word and `#` is
// zero or more words. Words are restricted to [A-Za-z0-9_-] so they never need escaping.
const WORD = /^[A-Za-z0-9_-]+$/;
const MAX_KEY_BYTES = 255; // AMQP shortstr

/**
 * Keys already found valid: a service has a handful of event types, and every message of a
 * drained batch is checked twice (the drain, then the transport). Bounded: cleared when full.
 */
const validKeys = new Set<string>();
const VALID_KEYS_MAX = 1024;

/** Throws `InvalidEventError` unless `key` is a routing key (`case.opened`). */
export function assertRoutingKey(key: unknown, field = 'eventType'): asserts key is string {
  if (typeof key === 'string' && validKeys.has(key)) return;
  if (typeof key !== 'string' || key.length === 0) throw new InvalidEventError(field, key, 'must be a non-empty string');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) throw new InvalidEventError(field, key, `must be at most ${MAX_KEY_BYTES} bytes`);
  for (const word of key.split('.')) {
    if (!WORD.test(word)) throw new InvalidEventError(field, key, 'must be dot-separated words of letters, digits, "_" or "-"');
  }
  if (validKeys.size >= VALID_KEYS_MAX) validKeys.clear();
  validKeys.add(key);
}

/** Throws `InvalidEventError` unless `pattern` is a topic pattern (`case.*`, `#`, `rule.#.failed`). */
export function assertTopicPattern(pattern: unknown): asserts pattern is string {
  if (typeof pattern !== 'string' || pattern.length === 0) throw new InvalidEventError('pattern', pattern, 'must be a non-empty string');
  if (Buffer.byteLength(pattern) > MAX_KEY_BYTES) throw new InvalidEventError('pattern', pattern, `must be at most ${MAX_KEY_BYTES} bytes`);
  for (const word of pattern.split('.')) {
    if (word !== '*' && word !== '#' && !WORD.test(word)) {
      throw new InvalidEventError('pattern', pattern, 'must be dot-separated words, "*" (one word) or "#" (zero or more words)');
    }
  }
}

/**
 * One anchored regular expression (PostgreSQL ARE and JavaScript agree on this subset) matching
 * `'.' || routing_key` for any of the patterns. Prefixing every word with a dot lets `#` match
 * zero words without special cases: `a.#.b` becomes `\.a(\.[^.]+)*\.b`, which matches `.a.b`.
 */
export function topicRegex(patterns: readonly string[]): string {
  if (patterns.length === 0) throw new InvalidEventError('patterns', patterns, 'must list at least one pattern');
  const alternatives = patterns.map((pattern) => {
    assertTopicPattern(pattern);
    return pattern
      .split('.')
      .map((word) => (word === '*' ? '\\.[^.]+' : word === '#' ? '(\\.[^.]+)*' : `\\.${word.replaceAll('-', '\\-')}`))
      .join('');
  });
  return `^(${[...new Set(alternatives)].join('|')})$`;
}

/** Does `key` match `pattern` under topic-exchange rules? (Word by word; the reference for tests.) */
export function topicMatches(pattern: string, key: string): boolean {
  const p = pattern.split('.');
  const k = key.split('.');
  const match = (i: number, j: number): boolean => {
    if (i === p.length) return j === k.length;
    if (p[i] === '#') {
      for (let skip = j; skip <= k.length; skip++) if (match(i + 1, skip)) return true;
      return false;
    }
    if (j === k.length) return false;
    return (p[i] === '*' || p[i] === k[j]) && match(i + 1, j + 1);
  };
  return match(0, 0);
}
