/**
 * @craig/store: an S3-compatible object store with every time bound pinned in code, and the
 * digest-verified create that makes archive objects immutable even on a backend that ignores
 * `If-None-Match`.
 */

/** Build the store from its settings (`settings.archive.objectStore`); refuses a local backend. */
export { createObjectStore } from './object-store.ts';
/** The store and its results. */
export type { BlobCreateOutcome, BlobCreateResult, CallOptions, ObjectInfo, ObjectStore, ObjectStoreOptions, PutCreateResult } from './object-store.ts';
/** What the store connects to; `ObjectStoreSettings` from `@craig/settings` fits it. */
export { checkBackend, type ObjectStoreBackend, type ObjectStoreConfig } from './config.ts';
/** The pinned bounds (30 s request, 5 s connect, 10 retries, 180 s per operation) and the default backoff. */
export { STORE_BOUNDS, BACKOFF_BASE_MS, BACKOFF_CAP_MS, jitteredBackoff, resolveBounds, type StoreBounds } from './bounds.ts';
/** SHA-256 helpers (hex, as the archive ledger records digests). */
export { sha256Hex, isSha256Hex } from './digest.ts';
/** The store's errors, each with a stable `code`. */
export {
  StoreError,
  ForeignObjectError,
  DigestMismatchError,
  ObjectNotFoundError,
  StoreRequestError,
  StoreConflictError,
  StoreBudgetExceededError,
  StoreAbortedError,
  UnsupportedBackendError,
  type ForeignObjectDetection,
} from './errors.ts';
