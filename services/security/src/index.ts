/**
 * @craig/svc-security: one `audit_log` row per event seen on the transport, one
 * `dead_letter_audit` row per dead letter of the fleet, both archived then pruned
 * (`@craig/retention`) past the hot window.
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type SecurityArchiveDeps, type SecurityDeps, type SecurityService } from './service.ts';
/** The database's migration sets (`mq`, `retention`, then `security`). */
export { securityMigrationSets, SECURITY_MIGRATIONS } from './migrations.ts';
/** The archive specs (insert-only, `received_at`), and the outbox hook announcing each archived batch. */
export { AUDIT_LOG_SPEC, DEAD_LETTER_AUDIT_SPEC, SECURITY_ARCHIVE_SPECS, ARCHIVE_BATCH_EVENT, announceArchivedBatch } from './archive-specs.ts';
/** The audit consumer (`security.audit` on `#`) and the dead-letter consumer. */
export { startAuditConsumers, AUDIT_CONSUMER, AUDIT_PATTERNS, type AuditConsumerOptions, type AuditConsumers } from './consumers.ts';
/** Reads and writes of the two audit tables. */
export { recordEvent, recordDeadLetter, listAudit, listDeadLetters, MAX_AUDIT_PAGE, DEFAULT_AUDIT_PAGE, type AuditRow, type DeadLetterRow, type AuditQuery } from './audit-store.ts';
/** The service's errors, each with a stable `code`. */
export { SecurityError, InvalidQueryError } from './errors.ts';
/** What the devstack seeds and drives. */
export { demo } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { SECURITY_EVENTS } from './events.ts';
