// A bulk delete's write-ahead log is mostly full-page images: the first change to a heap page
// after a checkpoint logs the whole 8 KiB page, and a retention sweep changes every page it
// passes. `wal_compression` compresses those images as they are logged, on the session that
// writes them, so a sweep can compress its own WAL without changing the server's setting for
// anyone else (ADR-069). It is a superuser parameter: the runtime role may set it only when
// granted `SET ON PARAMETER wal_compression` (ensureRuntimeRole asks for it; PostgreSQL 15+).
import type { Logger } from 'pino';
import type { Sql } from 'postgres';

/** The methods PostgreSQL 15 compresses full-page images with (lz4 and zstd only if built with them). */
export type WalCompressionMethod = 'lz4' | 'zstd' | 'pglz';

export const WAL_COMPRESSION_METHODS: readonly WalCompressionMethod[] = ['lz4', 'zstd', 'pglz'];

/** A setting's value (`SWEEP_WAL_COMPRESSION`, a bench option) as {@link compressSessionWal} takes it: `'off'` is `false`, the server's setting. */
export function walCompressionOf(value: WalCompressionMethod | 'off'): WalCompressionMethod | false {
  return value === 'off' ? false : value;
}

function assertMethod(method: WalCompressionMethod | false): void {
  if (method !== false && !WAL_COMPRESSION_METHODS.includes(method)) throw new TypeError(`wal compression method must be one of ${WAL_COMPRESSION_METHODS.join(', ')}: ${JSON.stringify(method)}`);
}

export interface SessionWalCompression {
  /** `wal_compression` on the session afterwards, as the server reports it. */
  readonly setting: string;
  /** Set by this call (false: the server's setting already compressed, or the SET was refused). */
  readonly changed: boolean;
  /** Why the SET was refused (no `SET ON PARAMETER` privilege, a server built without the method). */
  readonly refused?: string;
}

/**
 * Compress the session's full-page images with `method` for the rest of the session, unless
 * the server already compresses them (an operator's `pglz`, `lz4` or `zstd` is kept); `false`
 * only reports the server's setting. Refusal is not an error: the work goes on uncompressed,
 * and `refused` says why.
 */
export async function compressSessionWal(sql: Sql, method: WalCompressionMethod | false): Promise<SessionWalCompression> {
  assertMethod(method);
  const [current] = await sql<{ setting: string }[]>`select current_setting('wal_compression') as setting`;
  if (method === false || current!.setting !== 'off') return { setting: current!.setting, changed: false };
  let set: { setting: string } | undefined;
  try {
    [set] = await sql<{ setting: string }[]>`select set_config('wal_compression', ${method}, false) as setting`;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // 42501: no SET privilege on the parameter; 22023: a method this server was built without.
    if (code === '42501' || code === '22023') return { setting: current!.setting, changed: false, refused: (error as Error).message };
    throw error;
  }
  return { setting: set!.setting, changed: true };
}

/**
 * {@link compressSessionWal} for a sweep that sets it on every cycle's session: the first
 * refusal this compressor meets is warned about through the cycle's logger (`sweep` names what
 * runs uncompressed, and the warning says how to grant it), later ones go unsaid, so a role
 * without the privilege warns once per compressor (per process, where it is a module's), not
 * once per cycle.
 */
export function sessionWalCompressor(sweep: string): (sql: Sql, method: WalCompressionMethod | false, logger: Logger) => Promise<SessionWalCompression> {
  let warned = false;
  return async (sql, method, logger) => {
    const wal = await compressSessionWal(sql, method);
    if (wal.refused !== undefined && !warned) {
      warned = true;
      logger.warn({ reason: wal.refused }, `${sweep}: its session may not set wal_compression, so it writes uncompressed full-page images (grant it as a superuser: GRANT SET ON PARAMETER wal_compression TO <runtime role>; docs/adr/069-prune-wal-compression.md)`);
    }
    return wal;
  };
}

export interface TransactionWalCompression {
  /** The method each transaction should set with `SET LOCAL`; absent when none should. */
  readonly method?: WalCompressionMethod;
  /** `wal_compression` on the pool's sessions, as the server reports it. */
  readonly setting: string;
  /** Why the method cannot be set (no `SET ON PARAMETER` privilege, a server built without it). */
  readonly refused?: string;
}

/**
 * {@link compressSessionWal} for work that runs in short transactions on a shared pool, whose
 * sessions must not keep the setting: asks once, setting nothing, whether those transactions may
 * compress their full-page images with `method` by `SET LOCAL` (`set_config(…, true)`). The
 * answer holds for every session of the pool (one role, one database). A server that compresses
 * already keeps its method, `false` keeps the server's setting, and refusal is not an error:
 * `refused` says why, and the work goes on uncompressed.
 */
export async function transactionWalCompression(sql: Sql, method: WalCompressionMethod | false): Promise<TransactionWalCompression> {
  assertMethod(method);
  const [server] = await sql<{ setting: string; version: number }[]>`
    select current_setting('wal_compression') as setting, current_setting('server_version_num')::int as version`;
  const { setting, version } = server!;
  if (method === false || setting !== 'off') return { setting };
  // Parameter privileges, and every method but pglz, came with PostgreSQL 15.
  if (version < 150000) return { setting, refused: `wal_compression methods and their SET privilege need PostgreSQL 15 (server ${version})` };
  const [row] = await sql<{ role: string; may_set: boolean; built: boolean }[]>`
    select current_user as role, has_parameter_privilege('wal_compression', 'SET') as may_set, ${method}::text = any(enumvals) as built
    from pg_settings where name = 'wal_compression'`;
  const { role, may_set: maySet, built } = row!;
  if (!maySet) return { setting, refused: `role ${role} may not set wal_compression (no SET ON PARAMETER privilege)` };
  if (!built) return { setting, refused: `this server was built without ${method} for wal_compression` };
  return { method, setting };
}
