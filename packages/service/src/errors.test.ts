import { describe, expect, it } from 'vitest';
import { InvalidQueryError, limitParam, queryParam, refuseUnknownParams, ServiceError } from './errors.ts';
import { httpStatusFor } from './http-errors.ts';

const refusal = (fn: () => unknown): InvalidQueryError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidQueryError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('query parameters', () => {
  it('takes one value, refuses a repeated one by name', () => {
    expect(queryParam({ a: 'x' }, 'a')).toBe('x');
    expect(queryParam({}, 'a')).toBeUndefined();
    const e = refusal(() => queryParam({ a: ['x', 'y'] }, 'a'));
    expect(e).toMatchObject({ code: 'invalid_request', parameter: 'a', value: ['x', 'y'] });
    expect(e.message).toBe('query parameter a=["x","y"] must be given once');
    expect(httpStatusFor(e)).toBe(400);
  });

  it('refuses an unknown parameter, naming the known ones', () => {
    expect(() => refuseUnknownParams({ limit: '1' }, ['limit'])).not.toThrow();
    expect(refusal(() => refuseUnknownParams({ limt: '5' }, ['since', 'limit'])).message).toBe('query parameter limt="5" is not a parameter of this route (known: since, limit)');
  });

  it('bounds limit: whole numbers 1…max, the fallback when absent', () => {
    const bounds = { max: 500, fallback: 100 };
    expect(limitParam({}, bounds)).toBe(100);
    expect(limitParam({ limit: '500' }, bounds)).toBe(500);
    for (const bad of ['0', '501', '1e2', '-1', '1.5', '', ' 5']) {
      expect(refusal(() => limitParam({ limit: bad }, bounds)).message).toBe(`query parameter limit=${JSON.stringify(bad)} must be a whole number from 1 to 500`);
    }
  });

  it('service errors carry their code, retryability, cause and subclass name', () => {
    class LabError extends ServiceError {}
    const cause = new Error('root');
    const e = new LabError('lab_busy', 'busy', { retryable: true, cause });
    expect(e).toMatchObject({ name: 'LabError', code: 'lab_busy', retryable: true, message: 'busy', cause });
    expect(new LabError('x', 'y').retryable).toBe(false);
  });
});
