import { describe, expect, it } from 'vitest';
import { InvalidExternalIds, TooManyIds } from './errors.ts';
import { externalIdProblem, MAX_IDS_PER_CALL, validateExternalIds } from './external-ids.ts';

describe('validateExternalIds', () => {
  it('accepts up to 128 well-formed ids and deduplicates them in order', () => {
    expect(validateExternalIds(['b', 'a', 'b', 'plex://movie/5d77', 'x-1.2_3:4@5+6=7'])).toEqual(['b', 'a', 'plex://movie/5d77', 'x-1.2_3:4@5+6=7']);
    expect(validateExternalIds(Array.from({ length: MAX_IDS_PER_CALL }, (_, i) => `id${i}`))).toHaveLength(128);
    expect(validateExternalIds([])).toEqual([]);
  });

  it('refuses 129 ids with TooManyIds', () => {
    let error: unknown;
    try {
      validateExternalIds(Array.from({ length: 129 }, (_, i) => `id${i}`));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(TooManyIds);
    expect(error).toMatchObject({ code: 'too_many_ids', count: 129, max: 128 });
  });

  it('lists every malformed id with its index and reason', () => {
    let error: unknown;
    try {
      validateExternalIds(['ok', '', ' lead', 'x'.repeat(129), 7, null, 'new\nline', '-dash']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidExternalIds);
    const invalid = (error as InvalidExternalIds).invalid;
    expect(invalid.map((i) => i.index)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(invalid[3]).toMatchObject({ index: 4, value: 'number', reason: 'expected a string, got number' });
    expect(invalid[2]!.reason).toBe('129 characters; at most 128');
  });

  it('refuses a non-array', () => {
    expect(() => validateExternalIds('abc')).toThrow(InvalidExternalIds);
    expect(externalIdProblem('fine')).toBeUndefined();
  });
});
