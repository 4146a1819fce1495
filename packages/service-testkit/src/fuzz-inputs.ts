// The hostile inputs the HTTP fuzzer sends: wrong types, huge numbers, deep JSON, invalid
// UTF-8, 10 MB bodies, prototype keys, bad percent-escapes, missing/wrong/malformed tokens.
// Shaped values (a route's own fields, existing ids) are mixed in so that cases get past the
// first refusal and reach the handlers.
import fc from 'fast-check';

/** Something that looks like a value of one field: sometimes right, often wrong. */
export const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(),
  fc.constantFrom(0, -1, 1, 1.5, -0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, 2 ** 31, 2 ** 63, 1e308, -1e308, 5e-324),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('', ' ', '0', '-1', '1e3', '0x10', 'NaN', 'Infinity', 'null', 'true', '[]', '{}', '\u0000', '%00', '../../etc/passwd', "'; drop table x; --", 'x'.repeat(300), '9'.repeat(40)),
  fc.constantFrom('2026-01-01', '2026-01-01T00:00:00Z', '0000-01-01', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '9999-12-31T23:59:59.999Z', '2026-02-30', '2026-13-01', '1970-01-01T00:00:00.000+25:00'),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 }),
);

/** A field that is usually `valid`, sometimes any hostile value. */
export function field<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: hostileScalar, weight: 1 });
}

/** An object of mostly-valid fields, any of them missing, sometimes with an extra or prototype key. */
export function shapedObject(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const model = Object.fromEntries(Object.entries(fields).map(([k, a]) => [k, field(a)]));
  return fc
    .tuple(fc.record(model, { requiredKeys: [] }), fc.option(fc.constantFrom('extra', '__proto__', 'constructor', 'prototype'), { freq: 8 }), hostileScalar)
    .map(([object, extra, value]) => (extra === null ? object : { ...object, [extra]: value }));
}

const KEY_TEXT = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'a', ''), fc.string({ maxLength: 10 }));

function deepJson(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

const TEN_MB = Buffer.alloc(10 * 1024 * 1024, 0x61);
TEN_MB.write('{"a":"', 0);
TEN_MB.write('"}', TEN_MB.length - 2);

/** Byte sequences that are not UTF-8: a lone continuation byte, overlong forms, a CESU surrogate, 0xFF. */
const INVALID_UTF8: readonly Buffer[] = [Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xff, 0xfe]), Buffer.from([0xf4, 0x90, 0x80, 0x80]), Buffer.from([0xe2, 0x82])];

/** A request body as bytes (or none), and whether it pretends to be JSON. */
export interface FuzzBody {
  readonly payload: Buffer | string | undefined;
  readonly label: string;
}

export function bodyArbitrary(shape: fc.Arbitrary<unknown> | undefined): fc.Arbitrary<FuzzBody> {
  const json = (label: string, a: fc.Arbitrary<unknown>): fc.Arbitrary<FuzzBody> => a.map((v) => ({ payload: JSON.stringify(v) ?? 'null', label }));
  // Weights out of ~450 (with a shape): a 10 MB body costs ~25 ms to inject, so it is one case
  // in ~450 (two or three per route's 1,000), a deep one one in ~30.
  const options: { arbitrary: fc.Arbitrary<FuzzBody>; weight: number }[] = [
    { arbitrary: fc.constant({ payload: undefined, label: 'none' }), weight: 45 },
    { arbitrary: json('json', fc.jsonValue({ maxDepth: 4 })), weight: 30 },
    { arbitrary: json('object', fc.dictionary(KEY_TEXT, hostileScalar, { maxKeys: 5 })), weight: 30 },
    {
      arbitrary: fc.tuple(fc.integer({ min: 1, max: 60_000 }), fc.constantFrom<'array' | 'object'>('array', 'object')).map(([d, k]) => ({ payload: deepJson(d, k), label: `deep ${k} ${d}` })),
      weight: 15,
    },
    {
      arbitrary: fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890', '{"limit":1e400}', '{"limit":123456789012345678901234567890}', '{"ids":["1"],"limit":-0}', '{"a":1.0000000000000000001}', '"x"', '1', 'null', '[]', '{}', '', ' ', '{', '{"a":', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"admin":true}}}', '\ufeff{}').map((payload) => ({ payload, label: 'literal' })),
      weight: 30,
    },
    {
      arbitrary: fc.tuple(fc.constantFrom(...INVALID_UTF8), fc.constantFrom('{"a":"', '{"', '')).map(([bad, before]) => ({ payload: Buffer.concat([Buffer.from(before), bad, Buffer.from(before === '' ? '' : '"}')]), label: 'invalid utf-8' })),
      weight: 15,
    },
    { arbitrary: fc.constant({ payload: TEN_MB, label: '10 MB' }), weight: 1 },
  ];
  if (shape) options.push({ arbitrary: json('shaped', shape), weight: 240 });
  return fc.oneof(...options);
}

/** A path segment for a `:param`: a shaped value or a hostile one, percent-encoded (or raw junk escapes). */
export function segmentArbitrary(shaped: fc.Arbitrary<string> | undefined): fc.Arbitrary<string> {
  const hostile = fc.oneof(
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.string({ unit: 'grapheme', maxLength: 10 }).map(encodeURIComponent),
    fc.constantFrom('0', '-1', '1', '1.5', '1e3', '0x1f', '9'.repeat(25), '2147483648', '9007199254740993', '%00', '%FF', '%E0%A4%A', '%2F', '%2e%2e', '..', ' ', 'null', 'x'.repeat(101), '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
  );
  return shaped ? fc.oneof({ arbitrary: shaped, weight: 3 }, { arbitrary: hostile, weight: 2 }) : hostile;
}

/** A query string (with its `?`), or none: known keys with shaped values, repeats, junk escapes, prototype keys. */
export function queryArbitrary(known: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const keys = Object.keys(known);
  const pair = fc.oneof(
    ...(keys.length > 0 ? [{ arbitrary: fc.constantFrom(...keys).chain((k) => field(known[k]!).map((v) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))}`)), weight: 4 }] : []),
    { arbitrary: fc.tuple(KEY_TEXT, fc.string({ maxLength: 20 })).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`), weight: 2 },
    { arbitrary: fc.constantFrom('%ZZ=1', 'a=%FF', '=x', '&', 'a', 'a[b]=1', 'a.b=1', '__proto__[x]=1', `limit=${'9'.repeat(30)}`, 'limit=1&limit=2'), weight: 1 },
  );
  return fc.option(fc.array(pair, { minLength: 1, maxLength: 5 }).map((pairs) => `?${pairs.join('&')}`), { freq: 2 }).map((q) => q ?? '');
}

export type AuthKind = 'valid' | 'missing' | 'wrong' | 'malformed';

/**
 * The Authorization header: right in 60% of cases (`most`, admin routes, so their handlers are
 * reached), 20% (`some`, other routes) or 6% (`few`, admin routes whose handler is expensive).
 */
export function authArbitrary(token: string, share: 'most' | 'some' | 'few'): fc.Arbitrary<{ kind: AuthKind; header: string | string[] | undefined }> {
  const valid = fc.constantFrom(`Bearer ${token}`, `bearer ${token}`).map((header) => ({ kind: 'valid' as const, header }));
  return fc.oneof(
    { arbitrary: valid, weight: share === 'most' ? 24 : share === 'some' ? 4 : 1 },
    { arbitrary: fc.constant({ kind: 'missing' as const, header: undefined }), weight: 8 },
    { arbitrary: fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), fc.constantFrom(token.slice(0, -1), `${token}x`, token.toUpperCase(), 'x'.repeat(token.length))).map((t) => ({ kind: 'wrong' as const, header: `Bearer ${t.replace(/\s/g, '_') || '_'}` })), weight: 4 },
    { arbitrary: fc.constantFrom(token, `Basic ${token}`, `Bearer  ${token} extra`, 'Bearer', '', [`Bearer ${token}`, `Bearer ${token}`]).map((header) => ({ kind: 'malformed' as const, header })), weight: 4 },
  );
}

export const CONTENT_TYPES: readonly (string | undefined)[] = [
  ...Array.from({ length: 24 }, () => 'application/json'),
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; boundary=',
  ';;;',
  undefined,
];

export const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'SEARCH', 'PROPFIND'] as const;
