/**
 * The object client's time bounds, pinned here rather than inherited from SDK defaults (seed
 * 003: an upgrade that loosened an inherited default would silently let a stalled upload hold
 * shutdown forever). `bounds.test.ts` pins each value, and the integration tests check that the
 * client really behaves that way.
 */
export interface StoreBounds {
  /** One whole HTTP request, connect to last response byte (node-http-handler `requestTimeout` + `throwOnRequestTimeout`). */
  readonly requestTimeoutMs: number;
  /** Establishing the TCP (and TLS) connection. */
  readonly connectTimeoutMs: number;
  /** Retries after the first attempt: 10 retries are 11 attempts. Also bounds the store's own 409 retries. */
  readonly maxRetries: number;
  /**
   * Everything one store operation does (precheck, put, retries, backoff, read-back), cut by an
   * abort signal: what bounds "a stalled upload delays shutdown".
   */
  readonly operationBudgetMs: number;
}

export const STORE_BOUNDS: StoreBounds = Object.freeze({
  requestTimeoutMs: 30_000,
  connectTimeoutMs: 5_000,
  maxRetries: 10,
  operationBudgetMs: 180_000,
});

/** Base and cap of the default backoff (AWS "full jitter"). */
export const BACKOFF_BASE_MS = 100;
export const BACKOFF_CAP_MS = 20_000;

/**
 * The default delay before retry number `retry` (1-based): uniformly random in
 * [0, min(cap, base·2^(retry-1))). Jitter keeps replicas that failed together from retrying in
 * lockstep.
 */
export function jitteredBackoff(retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** Validate and complete caller overrides (tests shorten budgets through these). */
export function resolveBounds(overrides: Partial<StoreBounds> = {}): StoreBounds {
  const bounds = { ...STORE_BOUNDS, ...overrides };
  for (const [name, value] of Object.entries(bounds)) {
    const min = name === 'maxRetries' ? 0 : 1;
    if (!Number.isInteger(value) || value < min) throw new RangeError(`store bound ${name} must be an integer ≥ ${min}: ${value}`);
  }
  return Object.freeze(bounds);
}
