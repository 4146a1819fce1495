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
export { migrate, migrationTemplate, readMigrationSet, type MigrateOptions, type MigrateReport, type MigrationFile, type MigrationPreflightContext, type MigrationSet } from './migrate.ts';
export { LOCK_KEYS, assertDistinctLockKeys, type LockName } from './locks.ts';
export { classifyPgError, DbError, MigrationError, SessionLostError, type PgErrorClass, type PgErrorKind } from './errors.ts';
