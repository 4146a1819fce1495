/** Base of the retention errors: a stable `code`, `retryable`, the offending values, `cause`. */
export class RetentionError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** An archive spec (or the set of specs) cannot be archived safely as written. */
export class ArchiveSpecError extends RetentionError {
  readonly table: string;
  readonly field: string;
  readonly value: unknown;
  constructor(table: string, field: string, value: unknown, problem: string) {
    super('archive_spec_invalid', `archive spec for ${JSON.stringify(table)}: ${field}${value === undefined ? '' : `=${JSON.stringify(value)}`} ${problem}`);
    this.table = table;
    this.field = field;
    this.value = value;
  }
}

/**
 * The delete removed a different number of rows than the batch archived: a row changed (new
 * `xmin`), left its fixpoint or gained a dependent between select and delete. The transaction
 * was rolled back: every row is still hot and the object is an orphan that `--verify` lists.
 */
export class BatchCountMismatchError extends RetentionError {
  readonly table: string;
  readonly archiveId: string;
  readonly key: string;
  readonly archived: number;
  readonly deleted: number;
  constructor(fields: { table: string; archiveId: string; key: string; archived: number; deleted: number }) {
    super(
      'archive_count_mismatch',
      `archive batch ${fields.archiveId} of ${fields.table}: the delete matched ${fields.deleted} of ${fields.archived} archived rows; rolled back (rows stay hot, ${fields.key} is an orphan)`,
      { retryable: true },
    );
    this.table = fields.table;
    this.archiveId = fields.archiveId;
    this.key = fields.key;
    this.archived = fields.archived;
    this.deleted = fields.deleted;
  }
}

/** What a purge request asked to destroy. */
export interface PurgeRequest {
  readonly table?: string;
  readonly keys?: readonly string[];
  readonly before?: string;
  readonly reason?: string;
}

/**
 * Archive objects and ledger rows are never destroyed (D14: no destruction until a retention
 * schedule is named). Every purge request is refused with this error.
 */
export class PurgeRefusedError extends RetentionError {
  readonly service: string;
  readonly request: PurgeRequest;
  constructor(service: string, request: PurgeRequest) {
    super('purge_refused', `purge of ${service} archives refused: archive objects and their ledger are immutable and are never deleted (D14)`);
    this.service = service;
    this.request = request;
  }
}

/** An archive object listed in the ledger is missing, has a different digest, or a different row count. */
export class ArchiveIntegrityError extends RetentionError {
  readonly key: string;
  readonly archiveId: string;
  readonly problem: 'missing' | 'digest_mismatch' | 'row_count_mismatch' | 'unreadable';
  constructor(fields: { key: string; archiveId: string; problem: ArchiveIntegrityError['problem']; detail: string; cause?: unknown }) {
    super('archive_integrity', `archive object ${fields.key} (${fields.archiveId}): ${fields.detail}`, { cause: fields.cause });
    this.key = fields.key;
    this.archiveId = fields.archiveId;
    this.problem = fields.problem;
  }
}

/**
 * Another archiver of this database holds the archive lease (`archive_lease_held`, 409): an
 * on-demand cycle did nothing. Retry after the running cycle ends.
 */
export class ArchiveLeaseHeldError extends RetentionError {
  readonly service: string;
  constructor(service: string) {
    super('archive_lease_held', `another archiver of the ${service} database holds the archive lease; nothing was archived`, { retryable: true });
    this.service = service;
  }
}
