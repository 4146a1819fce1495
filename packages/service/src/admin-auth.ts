// Bearer-token checks for the admin routes. The presented token and the configured one are
// compared as SHA-256 digests with `timingSafeEqual`: both sides are always 32 bytes, so neither
// the comparison time nor an early length mismatch tells a caller how much of a guess was right,
// or how long the real token is.
import { createHash, timingSafeEqual } from 'node:crypto';
import { ServiceError } from './errors.ts';

/** Why an admin request was refused: no `Authorization` header, not `Bearer <token>`, or another token. */
export type UnauthorizedReason = 'missing' | 'malformed' | 'wrong_token';

const MESSAGES: Readonly<Record<UnauthorizedReason, string>> = {
  missing: 'this route needs Authorization: Bearer <admin token>',
  malformed: 'the Authorization header must be "Bearer <admin token>"',
  wrong_token: 'the bearer token is not the admin token',
};

/** A missing or wrong admin token (`unauthorized`, HTTP 401). Never carries the token itself. */
export class UnauthorizedError extends ServiceError {
  readonly reason: UnauthorizedReason;
  constructor(reason: UnauthorizedReason) {
    super('unauthorized', MESSAGES[reason]);
    this.reason = reason;
  }
}

/** Who called an admin route, as the audit records it. */
export interface AdminCaller {
  /** `sha256:` and the first 12 hex digits of the presented token's SHA-256; `null` when none was presented. */
  readonly token: string | null;
  readonly remoteAddress: string;
}

const BEARER = /^bearer +(\S+) *$/i;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The fingerprint an audit line carries for a token: enough to tell tokens apart (and to match
 * the configured one: `printf %s "$TOKEN" | sha256sum | cut -c1-12`), useless for recovering it.
 */
export function tokenFingerprint(token: string): string {
  return `sha256:${digest(token).toString('hex').slice(0, 12)}`;
}

export interface AdminTokenCheck {
  /**
   * Check a request's `Authorization` header (as Node or `inject` hands it: a string, a repeated
   * header's array, or nothing). Returns the presented token's fingerprint; throws
   * {@link UnauthorizedError} when it is not exactly `Bearer <the admin token>`.
   */
  verify(authorization: unknown): string;
  /** The fingerprint of whatever token the header presents (null when none), for refused requests' audit lines. */
  presented(authorization: unknown): string | null;
}

export function adminTokenCheck(adminToken: string): AdminTokenCheck {
  const expected = digest(adminToken);
  const tokenOf = (authorization: unknown): string | undefined => (typeof authorization === 'string' ? BEARER.exec(authorization)?.[1] : undefined);
  return {
    verify(authorization) {
      if (authorization === undefined || authorization === '') throw new UnauthorizedError('missing');
      const token = tokenOf(authorization);
      if (token === undefined) throw new UnauthorizedError('malformed');
      const given = digest(token);
      if (!timingSafeEqual(given, expected)) throw new UnauthorizedError('wrong_token');
      return `sha256:${given.toString('hex').slice(0, 12)}`;
    },
    presented(authorization) {
      const token = tokenOf(authorization);
      return token === undefined ? null : tokenFingerprint(token);
    },
  };
}
