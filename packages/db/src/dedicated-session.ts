import postgres, { type Sql } from 'postgres';
import { sessionParameters } from './client.ts';
import { SessionLostError } from './errors.ts';

/**
 * A connection opened for one piece of work and closed after it, never returned to a pool.
 *
 * Session advisory locks belong to the connection that took them. Taken on a pooled client,
 * the lock lands on whichever connection ran the query; that connection goes back to the pool
 * still holding it, the work and the unlock run elsewhere, and every later try-lock in every
 * replica fails forever: the sweep silently switches itself off (seed 000 §Step 3.1). Here the
 * lock lives exactly as long as this socket, and the socket is closed on every exit path.
 */
export interface DedicatedSession {
  /** A client bound to this one connection. It never reconnects: after a loss every query fails. */
  readonly sql: Sql;
  /** `pg_backend_pid()` of the connection. */
  readonly backendPid: number;
  /** Aborted when the connection is lost or the caller's signal aborts. Check it between batches. */
  readonly signal: AbortSignal;
  /** `pg_try_advisory_lock(key)`: false means another session holds it. */
  tryAdvisoryLock(key: bigint): Promise<boolean>;
  /** `pg_advisory_lock(key)`, waiting at most `timeoutMs` (then throws a lock-not-available error). */
  advisoryLock(key: bigint, timeoutMs: number): Promise<void>;
  /** Release one lock early; `withDedicatedSession` releases the rest on a healthy return. */
  advisoryUnlock(key: bigint): Promise<boolean>;
  /** Throws the abort reason (a `SessionLostError` when the connection dropped). */
  throwIfAborted(): void;
}

export interface DedicatedSessionOptions {
  readonly service: string;
  readonly signal?: AbortSignal;
  readonly statementTimeoutMs?: number;
  readonly lockTimeoutMs?: number;
  readonly connectTimeoutSeconds?: number;
  /** `SET ROLE` at connection start, as in `createClient`. */
  readonly role?: string;
}

/**
 * Run `fn` on a fresh connection and close it afterwards on every path. On a healthy return the
 * locks taken through the session are unlocked explicitly first; on a throw or abort the socket
 * is destroyed at once and the server releases them as the backend exits.
 */
export async function withDedicatedSession<T>(url: string, fn: (session: DedicatedSession) => Promise<T>, options: DedicatedSessionOptions): Promise<T> {
  options.signal?.throwIfAborted();
  const controller = new AbortController();
  let closing = false;
  let backendPid: number | undefined;

  const sql = postgres(url, {
    max: 1,
    // Never idle out or recycle: postgres.js would open a new connection transparently and
    // the work would go on without the lock it thinks it holds.
    idle_timeout: 0,
    max_lifetime: null,
    connect_timeout: options.connectTimeoutSeconds ?? 10,
    connection: sessionParameters(options),
    onnotice: () => {},
    onclose: () => {
      if (closing) return;
      // Lost under us. Ending the client makes every later query fail instead of reconnecting.
      closing = true;
      controller.abort(new SessionLostError(backendPid));
      void sql.end({ timeout: 0 });
    },
  });

  const onCallerAbort = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const held = new Set<bigint>();

  try {
    const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    backendPid = row!.pid;
    const session: DedicatedSession = {
      sql,
      backendPid,
      signal: controller.signal,
      async tryAdvisoryLock(key) {
        const [r] = await sql<{ locked: boolean }[]>`select pg_try_advisory_lock(${key.toString()}::bigint) as locked`;
        if (r!.locked) held.add(key);
        return r!.locked;
      },
      async advisoryLock(key, timeoutMs) {
        await sql.begin(async (tx) => {
          // lock_timeout bounds the advisory wait; the lock itself is session-level and
          // outlives this transaction.
          await tx`select set_config('lock_timeout', ${String(timeoutMs)}, true)`;
          await tx`select pg_advisory_lock(${key.toString()}::bigint)`;
        });
        held.add(key);
      },
      async advisoryUnlock(key) {
        const [r] = await sql<{ unlocked: boolean }[]>`select pg_advisory_unlock(${key.toString()}::bigint) as unlocked`;
        held.delete(key);
        return r!.unlocked;
      },
      throwIfAborted() {
        controller.signal.throwIfAborted();
      },
    };
    const result = await fn(session);
    controller.signal.throwIfAborted();
    for (const key of held) await sql`select pg_advisory_unlock(${key.toString()}::bigint)`;
    held.clear();
    closing = true;
    await sql.end({ timeout: 5 });
    return result;
  } catch (error) {
    // Destroy the socket now: the backend exits and releases every session lock with it.
    closing = true;
    await sql.end({ timeout: 0 });
    throw error;
  } finally {
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}
