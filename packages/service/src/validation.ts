import type { z } from 'zod';

/** Which part of a request a value came from. */
export type RequestPart = 'body' | 'params' | 'query';

/**
 * A request that does not match its schema (code `invalid_request`, HTTP 400). Names the first
 * offending field and its value; `issues` lists every problem as `path: message`.
 */
export class InvalidRequestError extends Error {
  readonly code = 'invalid_request';
  readonly retryable = false;
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly issues: readonly string[],
  ) {
    super(issues.join('; '));
  }
}

const MAX_ECHO = 200;

// Echo at most a bounded prefix of an offending string: an error body is not a copy of the input.
function echo(value: unknown): unknown {
  if (typeof value === 'string' && value.length > MAX_ECHO) return `${value.slice(0, MAX_ECHO)}… (${value.length} characters)`;
  if (value !== null && typeof value === 'object') return Array.isArray(value) ? '[array]' : '[object]';
  return value;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** Parse one part of a request with a zod schema; throws {@link InvalidRequestError} naming the offending value. */
export function parseRequest<T extends z.ZodType>(schema: T, input: unknown, part: RequestPart): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => `${[part, ...issue.path.map(String)].join('.')}: ${issue.message}`);
  const first = result.error.issues[0]!;
  throw new InvalidRequestError([part, ...first.path.map(String)].join('.'), echo(valueAt(input, first.path)), issues);
}
