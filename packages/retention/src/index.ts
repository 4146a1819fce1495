/**
 * @craig/retention: the archive-then-prune engine. Audit-class rows past the hot window and at
 * their fixpoint are serialized losslessly, written to the object store with a digest-verified
 * create, and only then deleted, exactly those row versions, in the same transaction that
 * records the object in the archive ledger. Archives are never purged.
 */

/** The engine: `createArchiveEngine(options)`, then `check()` at boot and `runCycle()` on a timer. */
export {
  createArchiveEngine,
  ARCHIVE_CYCLE_CAP,
  DEFAULT_GZIP_LEVEL,
  DEFAULT_ARCHIVE_OBJECT_BYTES,
  type ArchiveEngine,
  type ArchiveEngineOptions,
  type ArchivedBatch,
  type BatchProfile,
  type CycleReport,
  type TableOutcome,
  type TableReport,
} from './engine.ts';
/** The `onBatchArchived` hook that announces each archived batch through the outbox. */
export { announceArchivedBatches, type ArchivedBatchPayload, type BatchArchivedHook } from './announce.ts';
/** The timer loop and on-demand cycle every archiving service composes. */
export { ArchiveRunner, firstArchiveCycleMs, DEFAULT_FIRST_CYCLE_DELAY_SECONDS, type ArchiveRunnerOptions } from './runner.ts';
/** A service's archive from its deps (engine + runner), and at boot those deps with the object store opened and closed on stop. */
export { createServiceArchive, openArchiveDeps, type ArchiveDeps, type ArchiveSettingsInput, type ServiceArchiveOptions } from './service-archive.ts';
/** What to archive: a table, its key and timestamp, its fixpoint (a closed set) and its FK guards. */
export {
  defineArchiveSpec,
  checkSpecOrder,
  fixpoints,
  DEFAULT_ARCHIVE_BATCH,
  MAX_ARCHIVE_BATCH,
  type ArchiveSpec,
  type ArchiveSpecInput,
  type DependentGuard,
  type Fixpoint,
  type MutableColumn,
} from './spec.ts';
/** The writer-side in-WHERE refusal for columns the fixpoint does not read (precondition 4). */
export { notAtFixpoint } from './writer-refusal.ts';
/** The archive invariants (`<table>_archive_overrun`) for `retentionOverrun` from @craig/mq. */
export { archiveRetentionSpecs } from './overrun.ts';
/** The `retention` migration set (the archive ledger, the prune gate and its registry). */
export { RETENTION_MIGRATIONS } from './migrations.ts';
/** The owner's half of the prune gate: which tables `archive_prune_batch` may prune, by what policy; written after every migration run. */
export { archiveRegistration, registerArchiveSpecs, registrationOf, type ArchiveRegistration } from './prune-gate.ts';
/** Reading archives back: the ledger, one verified object, and a whole-archive verification with orphans. */
export {
  readLedger,
  readArchiveObject,
  verifyArchive,
  type ArchivedRow,
  type LedgerFilter,
  type LedgerRow,
  type ReadObjectOptions,
  type VerifyOptions,
  type VerifyReport,
} from './fetch.ts';
/** Archive object keys: `<prefix>/<service>/<table>/<yyyy>/<mm>/<archive_id>.ndjson.gz`. */
export { archiveKey, archivePrefixOf, type ArchiveKeyParts } from './archive-key.ts';
/** UUIDv7 archive ids. */
export { uuidv7, isUuidv7, uuidv7Time } from '@craig/db';
/** The package's errors, each with a stable `code`. */
export {
  RetentionError,
  ArchiveSpecError,
  BatchCountMismatchError,
  PurgeRefusedError,
  ArchiveLeaseHeldError,
  ArchiveIntegrityError,
  type PurgeRequest,
} from './errors.ts';
