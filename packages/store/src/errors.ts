/** Base of the store's errors: a stable `code`, `retryable`, the object key, and the `cause`. */
export class StoreError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly key: string | undefined;
  constructor(code: string, message: string, fields: { key?: string | undefined; retryable?: boolean; cause?: unknown } = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = fields.retryable ?? false;
    this.key = fields.key;
  }
}

/** Where a foreign occupant was noticed. */
export type ForeignObjectDetection = 'precheck' | 'precondition' | 'read_back';

/**
 * The key holds an object with different bytes than the ones being archived. Raised before
 * any write when the precheck finds it; after a 412 when the re-verify finds it; after the
 * write on a backend that ignores `If-None-Match` when the read-back finds it (an overwrite).
 */
export class ForeignObjectError extends StoreError {
  readonly expectedSha256: string;
  readonly foundSha256: string;
  readonly detectedBy: ForeignObjectDetection;
  constructor(key: string, expectedSha256: string, foundSha256: string, detectedBy: ForeignObjectDetection) {
    super(
      'foreign_object',
      `object ${key} holds different bytes (sha256 ${foundSha256}) than the ones being written (sha256 ${expectedSha256}); detected by ${detectedBy.replace('_', '-')}`,
      { key },
    );
    this.expectedSha256 = expectedSha256;
    this.foundSha256 = foundSha256;
    this.detectedBy = detectedBy;
  }
}

/** A read object's SHA-256 is not the one recorded for it. */
export class DigestMismatchError extends StoreError {
  readonly expectedSha256: string;
  readonly foundSha256: string;
  constructor(key: string, expectedSha256: string, foundSha256: string) {
    super('digest_mismatch', `object ${key} has sha256 ${foundSha256}, expected ${expectedSha256}`, { key });
    this.expectedSha256 = expectedSha256;
    this.foundSha256 = foundSha256;
  }
}

export class ObjectNotFoundError extends StoreError {
  constructor(key: string) {
    super('object_not_found', `object ${key} does not exist`, { key });
  }
}

/** The server (or the network) failed a request after the client's retries. */
export class StoreRequestError extends StoreError {
  readonly operation: string;
  /** HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** S3 error code (`InternalError`, `AccessDenied`, …) or the socket error code. */
  readonly s3Code: string | undefined;
  readonly attempts: number | undefined;
  constructor(operation: string, key: string | undefined, fields: { status?: number | undefined; s3Code?: string | undefined; attempts?: number | undefined; cause?: unknown }) {
    const retryable = fields.status === undefined || fields.status >= 500 || fields.status === 429;
    super(
      'store_request_failed',
      `${operation}${key ? ` ${key}` : ''} failed${fields.status ? ` with HTTP ${fields.status}` : ''}${fields.s3Code ? ` ${fields.s3Code}` : ''}${fields.attempts ? ` after ${fields.attempts} attempt(s)` : ''}`,
      { key, retryable, cause: fields.cause },
    );
    this.operation = operation;
    this.status = fields.status;
    this.s3Code = fields.s3Code;
    this.attempts = fields.attempts;
  }
}

/** 409 ConditionalRequestConflict on every one of the store's own retries. */
export class StoreConflictError extends StoreError {
  readonly attempts: number;
  constructor(key: string, attempts: number, cause?: unknown) {
    super('store_conflict', `create of ${key} met a conflicting concurrent write (409) on all ${attempts} attempts`, { key, retryable: true, cause });
    this.attempts = attempts;
  }
}

/** The operation used its whole time budget (retries, backoff and hung requests included). */
export class StoreBudgetExceededError extends StoreError {
  readonly operation: string;
  readonly budgetMs: number;
  constructor(operation: string, key: string | undefined, budgetMs: number, cause?: unknown) {
    super('store_budget_exceeded', `${operation}${key ? ` ${key}` : ''} gave up after its ${budgetMs} ms budget`, { key, retryable: true, cause });
    this.operation = operation;
    this.budgetMs = budgetMs;
  }
}

/** The caller's (shutdown) signal aborted the operation. */
export class StoreAbortedError extends StoreError {
  readonly operation: string;
  constructor(operation: string, key: string | undefined, cause?: unknown) {
    super('store_aborted', `${operation}${key ? ` ${key}` : ''} was aborted`, { key, retryable: true, cause });
    this.operation = operation;
  }
}

/** The configured backend is not one the store supports (a local filesystem is refused). */
export class UnsupportedBackendError extends StoreError {
  readonly backend: string;
  constructor(backend: string) {
    super(
      'unsupported_backend',
      backend === 'local' || backend === 'file' || backend === 'filesystem'
        ? `object store backend "${backend}" is refused: a local filesystem has no timeouts and no second copy; use "s3" or "garage"`
        : `object store backend ${JSON.stringify(backend)} is not supported; use "s3" (honours If-None-Match) or "garage" (ignores it)`,
    );
    this.backend = backend;
  }
}
