import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from './errors.ts';
import { MAX_IMPORT_LINES, parseImportRequest } from './import-request.ts';

function refusal(body: unknown): InvalidRequestError {
  try {
    parseImportRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return error as InvalidRequestError;
  }
  throw new Error('expected an InvalidRequestError');
}

const ok = { source: 'county-a', period: '2026-11', lines: [{ placementId: 'p-1', amount: '1250.00' }, { placementId: 'p-2', amount: 80 }] };

describe('parseImportRequest', () => {
  it('normalizes the period to the first of the month and keeps amounts as exact decimal text', () => {
    expect(parseImportRequest(ok)).toEqual({ source: 'county-a', period: '2026-11-01', lines: [{ placementId: 'p-1', amount: '1250.00' }, { placementId: 'p-2', amount: '80' }] });
    expect(parseImportRequest({ ...ok, period: '2026-11-01' }).period).toBe('2026-11-01');
  });

  it.each([
    [{ ...ok, lines: [ok.lines[0], { placementId: 'p-2', amount: '12.345' }] }, 'lines[1].amount', '12.345'],
    [{ ...ok, lines: [ok.lines[0], ok.lines[1], { placementId: 'p-3', amount: -5 }] }, 'lines[2].amount', -5],
    [{ ...ok, lines: [{ placementId: 'p-1', amount: 0.1 + 0.2 }] }, 'lines[0].amount', 0.1 + 0.2],
    [{ ...ok, lines: [{ placementId: 'p-1', amount: '1e3' }] }, 'lines[0].amount', '1e3'],
    [{ ...ok, lines: [{ placementId: 'p-1', amount: '1234567890123' }] }, 'lines[0].amount', '1234567890123'],
    [{ ...ok, lines: [ok.lines[0], { placementId: '', amount: '1' }] }, 'lines[1].placementId', ''],
    [{ ...ok, lines: [ok.lines[0], { placementId: ' p-2', amount: '1' }] }, 'lines[1].placementId', ' p-2'],
    [{ ...ok, lines: [{ placementId: 'p-1', amount: '1', note: 'x' }] }, 'lines[0].note', 'x'],
    [{ ...ok, lines: [null] }, 'lines[0]', null],
    [{ ...ok, period: '2026-13' }, 'period', '2026-13'],
    [{ ...ok, period: '2026-11-15' }, 'period', '2026-11-15'],
    [{ ...ok, source: 7 }, 'source', 7],
    [{ ...ok, extra: true }, 'extra', true],
    [{ ...ok, lines: [] }, 'lines', '0 lines'],
    [{ ...ok, lines: {} }, 'lines', {}],
  ])('refuses %j naming %s and its value', (body, field, value) => {
    const error = refusal(body);
    expect(error.code).toBe('invalid_request');
    expect(error.field).toBe(field);
    expect(error.value).toEqual(value);
    expect(error.message.startsWith(`${field}=`)).toBe(true);
  });

  it(`bounds the line count at ${MAX_IMPORT_LINES}`, () => {
    const line = { placementId: 'p', amount: '1' };
    expect(parseImportRequest({ ...ok, lines: Array.from({ length: MAX_IMPORT_LINES }, () => line) }).lines).toHaveLength(MAX_IMPORT_LINES);
    expect(refusal({ ...ok, lines: Array.from({ length: MAX_IMPORT_LINES + 1 }, () => line) }).value).toBe(`${MAX_IMPORT_LINES + 1} lines`);
  });

  it('refuses a body that is not an object', () => {
    expect(refusal([ok]).field).toBe('body');
    expect(refusal(null).field).toBe('body');
  });
});

// Found by the HTTP fuzzer: POST /v1/subsidy-imports with a 33,823-deep {"a":{"a":…}} body and POST
// /v1/admin/reconcile/settle with a 6,293-deep [[…]] answered 500: the refusal's message was
// JSON.stringify of the whole value, which overflowed the stack.
describe('a deep body', () => {
  const deep = (depth: number, kind: 'array' | 'object'): unknown => JSON.parse(kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);

  it.each(['array', 'object'] as const)('is refused with a bounded message, never a stack overflow (a 50,000-deep %s)', (kind) => {
    const e = kind === 'object' ? refusal(deep(50_000, kind)) : refusal(deep(50_000, kind));
    expect(e.message.length).toBeLessThan(400);
    expect(new InvalidRequestError('body', deep(50_000, kind), 'must be a JSON object { limit? }').message).toMatch(/^body=.{1,250} must be a JSON object/);
  });
});
