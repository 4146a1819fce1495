/**
 * Every refusal of the cleanup protocol and of the admission triggers, as a typed error with a
 * stable `code` (mapped to HTTP statuses in packages/service/src/http-errors.ts), `retryable`,
 * the offending values as fields, and `cause`.
 */
export class CleanupError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** Another job owns the server (collecting ones too): jobs on one server are serialized. */
export class ServerBusy extends CleanupError {
  constructor(
    readonly serverId: number,
    readonly busyJobId: number,
    readonly busyKind: string,
    readonly busyState: string,
    cause?: unknown,
  ) {
    super('server_busy', `server ${serverId} already has cleanup job ${busyJobId} (${busyKind}, ${busyState}); jobs on one server run one at a time`, { cause });
  }
}

/** More external ids in one call than a manifest page may hold. */
export class TooManyIds extends CleanupError {
  constructor(
    readonly count: number,
    readonly max: number,
  ) {
    super('too_many_ids', `${count} external ids in one call; at most ${max}`);
  }
}

/** Some external ids are not ids: each offender with its index and why. */
export class InvalidExternalIds extends CleanupError {
  constructor(readonly invalid: ReadonlyArray<{ readonly index: number; readonly value: unknown; readonly reason: string }>) {
    const first = invalid[0];
    super(
      'invalid_external_ids',
      `${invalid.length} invalid external id${invalid.length === 1 ? '' : 's'}${first ? ` (first at index ${first.index}: ${first.reason})` : ''}`,
    );
  }
}

/** The manifest does not hold the number of unique ids the traversal claims: not complete, not sealed. */
export class ManifestCountMismatch extends CleanupError {
  constructor(
    readonly jobId: number,
    readonly expected: number,
    readonly actual: number,
  ) {
    super('manifest_count_mismatch', `job ${jobId}: the manifest holds ${actual} unique ids, the traversal claims ${expected}; a partial traversal cannot be sealed`);
  }
}

export class JobNotFound extends CleanupError {
  constructor(readonly jobId: number) {
    super('job_not_found', `cleanup job ${jobId} does not exist`);
  }
}

/** The operation does not fit the job's state (appending to a sealed job, stepping a collecting one, …). */
export class JobStateConflict extends CleanupError {
  constructor(
    readonly jobId: number,
    readonly state: string,
    readonly operation: string,
    message: string,
    readonly expectedStep?: number,
  ) {
    super('job_state_conflict', `job ${jobId} (${state}): ${message}`);
  }
}

/** The request names no valid job (kind, ids, a library on another server). */
export class InvalidJobRequest extends CleanupError {
  constructor(
    message: string,
    readonly field: string,
    readonly value: unknown,
  ) {
    super('invalid_job_request', message);
  }
}

/** The server or library a job or a write names does not exist. */
export class TargetNotFound extends CleanupError {
  constructor(
    readonly scope: 'server' | 'library',
    readonly id: number,
    cause?: unknown,
  ) {
    super('parent_not_found', `${scope} ${id} does not exist`, { cause });
  }
}

/** The destination server or library is draining: a cleanup job has closed its admission. */
export class AdmissionClosed extends CleanupError {
  constructor(
    readonly scope: 'server' | 'library',
    readonly id: number,
    cause?: unknown,
  ) {
    super('admission_closed', `${scope} ${id} is draining: admission is closed until its cleanup job ends`, { cause });
  }
}

/**
 * A gate row was locked by someone else (`NOWAIT`), or a protocol lock could not be had within
 * the lock timeout. Nothing changed; retry the whole transaction later.
 */
export class AdmissionBusy extends CleanupError {
  constructor(
    readonly relation: string | undefined,
    cause?: unknown,
  ) {
    super('admission_busy', `${relation ? `a ${relation} row` : 'a cleanup lock'} is held by a concurrent transaction; retry later`, { retryable: true, cause });
  }
}

/** A source write the triggers refuse: a library of another server, or a changed identity. */
export class SourceWriteRefused extends CleanupError {
  constructor(
    code: 'parent_mismatch' | 'identity_immutable',
    message: string,
    readonly detail: Readonly<Record<string, unknown>>,
    cause?: unknown,
  ) {
    super(code, message, { cause });
  }
}

/** A parent delete or an admission change outside a cleanup job: even an empty parent needs the protocol. */
export class ProtocolRequired extends CleanupError {
  constructor(
    message: string,
    readonly detail: Readonly<Record<string, unknown>>,
    cause?: unknown,
  ) {
    super('cleanup_protocol_required', message, { cause });
  }
}

/** The installer guard: the schema installs only into allow-listed databases. */
export class DatabaseNotAllowed extends CleanupError {
  constructor(
    readonly database: string,
    readonly allowed: readonly string[],
  ) {
    super('database_not_allowed', `database "${database}" is not on the cleanup allow-list (${allowed.join(', ') || 'empty'}); refusing to install`);
  }
}
