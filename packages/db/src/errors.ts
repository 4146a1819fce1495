/** What kind of PostgreSQL failure this is, decided in one place. */
export type PgErrorKind =
  | 'connection'
  | 'unique_violation'
  | 'deadlock'
  | 'serialization'
  | 'lock_not_available'
  | 'timeout'
  | 'check_violation'
  | 'foreign_key_violation'
  | 'raise'
  | 'other';

export interface PgErrorClass {
  readonly kind: PgErrorKind;
  /** Retrying the same work later (in a new transaction) can succeed. */
  readonly retryable: boolean;
  /** SQLSTATE, or the driver's code for connection-level failures. */
  readonly code: string | undefined;
}

// postgres.js reports socket-level failures with these codes instead of a SQLSTATE.
const DRIVER_CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
]);

/**
 * Classify an error thrown by postgres.js. SQLSTATE classes: 08 connection exceptions,
 * 23505 unique, 40P01 deadlock, 40001 serialization, 55P03 lock not available (also what
 * `lock_timeout` and `NOWAIT` raise), 57014 statement timeout / cancel, 57P01–57P03 server
 * shutting down or unavailable, 53300 too many connections.
 */
export function classifyPgError(error: unknown): PgErrorClass {
  const code = errorCode(error);
  if (code === undefined) return { kind: 'other', retryable: false, code };
  if (DRIVER_CONNECTION_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') {
    return { kind: 'connection', retryable: true, code };
  }
  switch (code) {
    case '23505':
      return { kind: 'unique_violation', retryable: false, code };
    case '23514':
      return { kind: 'check_violation', retryable: false, code };
    case '23503':
      return { kind: 'foreign_key_violation', retryable: false, code };
    case '40P01':
      return { kind: 'deadlock', retryable: true, code };
    case '40001':
      return { kind: 'serialization', retryable: true, code };
    case '55P03':
      return { kind: 'lock_not_available', retryable: true, code };
    case '57014':
    case '25P03':
      return { kind: 'timeout', retryable: true, code };
    case 'P0001':
      return { kind: 'raise', retryable: false, code };
    default:
      return { kind: 'other', retryable: false, code };
  }
}

function errorCode(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/** Base of this package's own errors: a stable `code`, `retryable`, and the `cause`. */
export class DbError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** An applied migration's file changed, went missing, or a set's files are inconsistent. */
export class MigrationError extends DbError {
  readonly set: string;
  readonly file: string | undefined;
  constructor(code: 'migration_checksum_mismatch' | 'migration_missing' | 'migration_out_of_order' | 'migration_invalid' | 'migration_failed', message: string, fields: { set: string; file?: string; cause?: unknown }) {
    super(code, message, { cause: fields.cause });
    this.set = fields.set;
    this.file = fields.file;
  }
}

/** The runtime role could not be created, corrected or granted, or holds what it must not. */
export class RuntimeRoleError extends DbError {
  readonly role: string;
  /** The objects at fault (tables the role owns, grants naming missing objects), when any. */
  readonly objects: readonly string[];
  constructor(
    code: 'runtime_role_invalid' | 'runtime_role_failed' | 'runtime_role_privilege' | 'runtime_role_owns_objects' | 'runtime_grant_unknown_object',
    message: string,
    fields: { role: string; objects?: readonly string[]; cause?: unknown },
  ) {
    super(code, message, { cause: fields.cause });
    this.role = fields.role;
    this.objects = fields.objects ?? [];
  }
}

/** The dedicated session's connection closed under the caller: any lock it held is gone. */
export class SessionLostError extends DbError {
  constructor(readonly backendPid: number | undefined, cause?: unknown) {
    super('session_lost', `dedicated session${backendPid ? ` (backend pid ${backendPid})` : ''} lost its connection; its advisory locks are released`, { retryable: true, cause });
  }
}
