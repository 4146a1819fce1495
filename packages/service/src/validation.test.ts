import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { httpStatusFor } from './http-errors.ts';
import { InvalidRequestError, parseRequest } from './validation.ts';

const body = z.strictObject({ caseId: z.uuid(), tags: z.array(z.string().max(3)).optional(), note: z.string().max(5).optional() });

describe('parseRequest', () => {
  it('returns the parsed value', () => {
    const caseId = '11111111-1111-4111-8111-111111111111';
    expect(parseRequest(body, { caseId }, 'body')).toEqual({ caseId });
  });

  it('names the first offending field with its value, lists every issue, and maps to 400', () => {
    let error: unknown;
    try {
      parseRequest(body, { caseId: 'nope', tags: ['ok', 'long'] }, 'body');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ code: 'invalid_request', field: 'body.caseId', value: 'nope' });
    expect((error as InvalidRequestError).issues).toHaveLength(2);
    expect((error as InvalidRequestError).issues[1]).toMatch(/^body\.tags\.1: /);
    expect(httpStatusFor(error)).toBe(400);
  });

  it('echoes a long value only as a bounded prefix and objects only by kind', () => {
    expect(() => parseRequest(body, { caseId: 'x'.repeat(5000) }, 'body')).toThrow(expect.objectContaining({ value: `${'x'.repeat(200)}… (5000 characters)` }));
    expect(() => parseRequest(body, ['a'], 'body')).toThrow(expect.objectContaining({ field: 'body', value: '[array]' }));
    expect(() => parseRequest(body, undefined, 'query')).toThrow(expect.objectContaining({ field: 'query', value: undefined }));
  });
});
