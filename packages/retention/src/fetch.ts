import { promisify } from 'node:util';
import { gunzip as gunzipCallback } from 'node:zlib';
import { DigestMismatchError, ObjectNotFoundError, type ObjectInfo, type ObjectStore } from '@craig/store';
import type { Sql } from '@craig/db';
import { archivePrefixOf } from './archive-key.ts';
import { ArchiveIntegrityError } from './errors.ts';

const gunzip = promisify(gunzipCallback);

/** One row of `archive_ledger`. */
export interface LedgerRow {
  readonly archiveId: string;
  readonly table: string;
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
  readonly rowCount: number;
  readonly minKey: string;
  readonly maxKey: string;
  /** ISO 8601, UTC, microseconds. */
  readonly minTs: string;
  readonly maxTs: string;
  readonly createdAt: string;
}

export interface LedgerFilter {
  readonly table?: string;
  /** Objects holding a row at or after this instant. */
  readonly since?: Date;
  /** Objects holding a row before this instant. */
  readonly until?: Date;
}

/** The ledger entries overlapping the filter, by table then time. */
export async function readLedger(sql: Sql, filter: LedgerFilter = {}): Promise<LedgerRow[]> {
  const rows = await sql<{ archive_id: string; table_name: string; object_key: string; sha256: string; bytes: string; row_count: number; min_key: string; max_key: string; min_ts: string; max_ts: string; created_at: string }[]>`
    select archive_id::text, table_name, object_key, sha256, bytes::text, row_count, min_key, max_key,
           to_char(min_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as min_ts,
           to_char(max_ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as max_ts,
           to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at
    from archive_ledger
    where true
      ${filter.table === undefined ? sql`` : sql`and table_name = ${filter.table}`}
      ${filter.since === undefined ? sql`` : sql`and max_ts >= ${filter.since}`}
      ${filter.until === undefined ? sql`` : sql`and min_ts < ${filter.until}`}
    order by table_name, min_ts, archive_id`;
  return rows.map((r) => ({
    archiveId: r.archive_id,
    table: r.table_name,
    key: r.object_key,
    sha256: r.sha256,
    bytes: Number(r.bytes),
    rowCount: r.row_count,
    minKey: r.min_key,
    maxKey: r.max_key,
    minTs: r.min_ts,
    maxTs: r.max_ts,
    createdAt: r.created_at,
  }));
}

/** An archived row as written: column name → PostgreSQL text of the value (or null). */
export type ArchivedRow = Record<string, string | null>;

export interface ReadObjectOptions {
  readonly signal?: AbortSignal;
  /** Keep only rows whose `column` is in [since, until). */
  readonly rowFilter?: { readonly column: string; readonly since?: Date; readonly until?: Date };
}

/**
 * Download one ledger entry's object, verify its SHA-256 and row count against the ledger, and
 * return its rows (NDJSON lines, parsed). Any problem is an `ArchiveIntegrityError` naming the key.
 */
export async function readArchiveObject(store: ObjectStore, entry: LedgerRow, options: ReadObjectOptions = {}): Promise<ArchivedRow[]> {
  const problem = (kind: ArchiveIntegrityError['problem'], detail: string, cause?: unknown) =>
    new ArchiveIntegrityError({ key: entry.key, archiveId: entry.archiveId, problem: kind, detail, cause });
  let bytes: Buffer;
  try {
    bytes = await store.getVerified(entry.key, entry.sha256, options.signal ? { signal: options.signal } : {});
  } catch (error) {
    if (error instanceof ObjectNotFoundError) throw problem('missing', 'is listed in the ledger but missing from the store', error);
    if (error instanceof DigestMismatchError) throw problem('digest_mismatch', `has sha256 ${error.foundSha256}, the ledger says ${entry.sha256}`, error);
    throw error;
  }
  let rows: ArchivedRow[];
  try {
    const text = (await gunzip(bytes)).toString('utf8');
    const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    rows = lines.map((line) => {
      const row: unknown = JSON.parse(line);
      if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new Error('a line is not a JSON object');
      return row as ArchivedRow;
    });
  } catch (error) {
    throw problem('unreadable', `is not gzip NDJSON: ${(error as Error).message}`, error);
  }
  if (rows.length !== entry.rowCount) throw problem('row_count_mismatch', `holds ${rows.length} rows, the ledger says ${entry.rowCount}`);
  const filter = options.rowFilter;
  if (!filter || (filter.since === undefined && filter.until === undefined)) return rows;
  const since = filter.since === undefined ? undefined : instantKey(filter.since);
  const until = filter.until === undefined ? undefined : instantKey(filter.until);
  return rows.filter((row) => {
    const at = timestampKey(row[filter.column] ?? null);
    return at !== undefined && (since === undefined || at >= since) && (until === undefined || at < until);
  });
}

/** What `verifyArchive` found. */
export interface VerifyReport {
  readonly checked: number;
  readonly rows: number;
  readonly bytes: number;
  readonly problems: readonly ArchiveIntegrityError[];
  /** Objects under the service's prefix that no ledger entry names. */
  readonly orphans: readonly ObjectInfo[];
}

export interface VerifyOptions {
  readonly sql: Sql;
  readonly store: ObjectStore;
  readonly service: string;
  readonly prefix: string;
  readonly filter?: LedgerFilter;
  readonly signal?: AbortSignal;
  readonly onProgress?: (done: number, total: number, bytes: number) => void;
}

/**
 * Check every ledger entry (download, SHA-256, row count) and list the orphans: objects under
 * `<prefix>/<service>/` (or the filtered table's folder) that the ledger does not name.
 */
export async function verifyArchive(options: VerifyOptions): Promise<VerifyReport> {
  const entries = await readLedger(options.sql, options.filter);
  const problems: ArchiveIntegrityError[] = [];
  let rows = 0;
  let bytes = 0;
  for (const [i, entry] of entries.entries()) {
    options.signal?.throwIfAborted();
    try {
      rows += (await readArchiveObject(options.store, entry, options.signal ? { signal: options.signal } : {})).length;
      bytes += entry.bytes;
    } catch (error) {
      if (!(error instanceof ArchiveIntegrityError)) throw error;
      problems.push(error);
    }
    options.onProgress?.(i + 1, entries.length, bytes);
  }
  const known = new Set((await options.sql<{ object_key: string }[]>`select object_key from archive_ledger`).map((r) => r.object_key));
  const orphans: ObjectInfo[] = [];
  for await (const object of options.store.list(archivePrefixOf(options.prefix, options.service, options.filter?.table), options.signal ? { signal: options.signal } : {})) {
    if (!known.has(object.key)) orphans.push(object);
  }
  return { checked: entries.length, rows, bytes, problems, orphans };
}

/** `2024-03-01 12:00:00.5+00` (PostgreSQL, UTC) → a string that sorts in time order. */
function timestampKey(text: string | null): string | undefined {
  if (text === null) return undefined;
  if (text === '-infinity' || text.endsWith(' BC')) return '';
  if (text === 'infinity') return '~';
  const m = /^(\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\+00$/.exec(text);
  if (!m) return undefined;
  return `${m[1]!.padStart(6, '0')}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${(m[7] ?? '').padEnd(6, '0')}`;
}

function instantKey(date: Date): string {
  const iso = date.toISOString(); // 2024-03-01T12:00:00.500Z
  return `${iso.slice(0, 4).padStart(6, '0')}${iso.slice(4, 23)}000`;
}
