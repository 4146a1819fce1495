import { InvalidExternalIds, TooManyIds } from './errors.ts';

/** Most external ids one `appendSeen` call (one manifest page) may carry. */
export const MAX_IDS_PER_CALL = 128;

/**
 * What an external id looks like: 1–128 characters, starting with a letter or digit, then
 * letters, digits and `. _ : / @ + = -`. The tables check the same pattern.
 */
export const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$/;

/**
 * Validate one page of external ids, all of it before anything is written: more than
 * {@link MAX_IDS_PER_CALL} is {@link TooManyIds}; any non-string, empty, too long or
 * ill-formed id is {@link InvalidExternalIds} listing every offender with its index.
 * Returns the ids deduplicated, in first-seen order.
 */
export function validateExternalIds(ids: unknown, max = MAX_IDS_PER_CALL): string[] {
  if (!Array.isArray(ids)) throw new InvalidExternalIds([{ index: -1, value: typeof ids, reason: 'expected an array of external ids' }]);
  if (ids.length > max) throw new TooManyIds(ids.length, max);
  const invalid: Array<{ index: number; value: unknown; reason: string }> = [];
  ids.forEach((id: unknown, index) => {
    const reason = externalIdProblem(id);
    if (reason) invalid.push({ index, value: typeof id === 'string' ? id.slice(0, 160) : id === null ? null : typeof id, reason });
  });
  if (invalid.length > 0) throw new InvalidExternalIds(invalid);
  return [...new Set(ids as string[])];
}

/** Why `id` is not an external id, or `undefined` when it is one. */
export function externalIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return `expected a string, got ${id === null ? 'null' : typeof id}`;
  if (id.length === 0) return 'empty';
  if (id.length > 128) return `${id.length} characters; at most 128`;
  if (!EXTERNAL_ID_PATTERN.test(id)) return 'must start with a letter or digit and contain only letters, digits and . _ : / @ + = -';
  return undefined;
}
