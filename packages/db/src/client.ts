import postgres, { type Sql } from 'postgres';

export type { Sql, TransactionSql } from 'postgres';

export interface ClientOptions {
  /** Becomes `application_name`, so `pg_stat_activity` shows who holds what. */
  readonly service: string;
  /** Pool size. Small by default: every service has its own database and many replicas. */
  readonly max?: number;
  /** Server-side cap on one statement. A sweep batch that runs longer than this is a bug. */
  readonly statementTimeoutMs?: number;
  /** Server-side cap on waiting for a row or table lock, so a writer never queues behind a sweep. */
  readonly lockTimeoutMs?: number;
  /** A transaction left open by a crashed handler is ended by the server after this. */
  readonly idleInTransactionTimeoutMs?: number;
  /**
   * How often the server checks, while a statement runs, that the client is still there
   * (`client_connection_check_interval`, PostgreSQL ≥ 14). A process killed mid-statement
   * (SIGKILL, OOM) cannot cancel its query; without the check its backend runs the statement
   * to the end, holding its locks (a sweep's advisory lock among them) until then.
   */
  readonly clientCheckIntervalMs?: number;
  /**
   * `SET ROLE` at connection start (a startup parameter): the session's privileges are this
   * role's, so a service can run as a non-owner runtime role. The login must be a member.
   */
  readonly role?: string;
  /** Seconds to wait for a connection to open. */
  readonly connectTimeoutSeconds?: number;
  /** Seconds an idle pooled connection is kept; 0 keeps it forever. */
  readonly idleTimeoutSeconds?: number;
  /** Seconds before a pooled connection is recycled; `null` never recycles. */
  readonly maxLifetimeSeconds?: number | null;
  /** Receives server notices; dropped by default (postgres.js prints them to the console). */
  readonly onNotice?: (notice: postgres.Notice) => void;
  readonly onClose?: (connectionId: number) => void;
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;
export const DEFAULT_CLIENT_CHECK_INTERVAL_MS = 1_000;

/** The session parameters every craig connection starts with. */
export function sessionParameters(options: Pick<ClientOptions, 'service' | 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleInTransactionTimeoutMs' | 'clientCheckIntervalMs' | 'role'>): Record<string, string> {
  return {
    application_name: options.service,
    statement_timeout: String(options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS),
    lock_timeout: String(options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS),
    idle_in_transaction_session_timeout: String(options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS),
    client_connection_check_interval: String(options.clientCheckIntervalMs ?? DEFAULT_CLIENT_CHECK_INTERVAL_MS),
    ...(options.role === undefined ? {} : { role: options.role }),
  };
}

/**
 * A postgres.js pool with the platform's session parameters. Statement and lock timeouts are
 * set by the server, so they hold whatever the caller forgets.
 */
export function createClient(url: string, options: ClientOptions): Sql {
  return postgres(url, {
    max: options.max ?? 5,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    idle_timeout: options.idleTimeoutSeconds ?? 60,
    max_lifetime: options.maxLifetimeSeconds === undefined ? 30 * 60 : options.maxLifetimeSeconds,
    connection: sessionParameters(options),
    onnotice: options.onNotice ?? (() => {}),
    ...(options.onClose ? { onclose: options.onClose } : {}),
  });
}
