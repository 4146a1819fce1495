/**
 * @craig/db: the PostgreSQL plumbing every package shares. Pooled clients with server-side
 * timeouts, checksummed forward-only migrations per set, dedicated sessions for advisory locks,
 * the registry of lock keys, and one classifier for PostgreSQL errors.
 */
export {
  createClient,
  sessionParameters,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_CLIENT_CHECK_INTERVAL_MS,
  type ClientOptions,
  type Sql,
  type TransactionSql,
} from './client.ts';
export { withDedicatedSession, type DedicatedSession, type DedicatedSessionOptions } from './dedicated-session.ts';
export { migrate, migrationTemplate, readMigrationSet, type MigrateOptions, type MigrateReport, type MigrationFile, type MigrationHook, type MigrationPreflightContext, type MigrationSet } from './migrate.ts';
/** The runtime login role: created or corrected cluster-wide, race-safe; its password sent as a SCRAM verifier. */
export { ensureRuntimeRole, scramVerifier, assertRoleName, ROLE_NAME_PATTERN, type RuntimeRoleOptions, type RuntimeRoleReport } from './runtime-role.ts';
/** What a set's runtime role may do; applied per database with everything else revoked. */
export { applyRuntimeGrants, defineRuntimeGrants, mergeRuntimeGrants, type AppliedGrants, type RuntimeGrants, type TablePrivilege } from './runtime-grants.ts';
/** A session's own full-page-image compression, for bulk deletes (ADR-069). */
export { compressSessionWal, sessionWalCompressor, transactionWalCompression, WAL_COMPRESSION_METHODS, walCompressionOf, type SessionWalCompression, type TransactionWalCompression, type WalCompressionMethod } from './wal-compression.ts';
/** Time-ordered ids: event ids (stageEvent's default) and archive ids. */
export { uuidv7, isUuidv7, uuidv7Time } from './uuidv7.ts';
export { LOCK_KEYS, assertDistinctLockKeys, type LockName } from './locks.ts';
export { classifyPgError, DbError, MigrationError, RuntimeRoleError, SessionLostError, type PgErrorClass, type PgErrorKind } from './errors.ts';
