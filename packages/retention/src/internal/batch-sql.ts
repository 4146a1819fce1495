import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import { ALIAS, eligibleSql } from './predicates.ts';
import type { TablePlan } from './catalog.ts';

/** One selected batch, serialized by the database. */
export interface SelectedBatch {
  readonly count: number;
  /** NDJSON (UTF-8), newline-terminated: one JSON object per row, columns in table order, every value its PostgreSQL text (or null). */
  readonly body: Buffer;
  /** First and last key of the batch (it is in key order): the ledger's range and the keyset cursor. */
  readonly minKey: string;
  readonly maxKey: string;
  /**
   * The batch's `ctid`s, keys and `xmin`s as PostgreSQL array literals (index i of each is one
   * row), built from the wire bytes: the exact delete binds them as text.
   */
  readonly ctids: string;
  readonly keys: string;
  readonly xmins: string;
  /** Oldest and newest row timestamp, as PostgreSQL prints them (UTC, microseconds). */
  readonly minTs: string;
  readonly maxTs: string;
}

/**
 * Session settings that make every value's text form canonical and lossless: UTC ISO
 * timestamps with microseconds, shortest-exact floats, hex bytea. The batch reader connects
 * with them as startup parameters, so a reconnect could never silently drop them.
 */
export const CANONICAL_OUTPUT: Readonly<Record<string, string>> = Object.freeze({
  TimeZone: 'UTC',
  DateStyle: 'ISO, YMD',
  IntervalStyle: 'postgres',
  extra_float_digits: '1',
  bytea_output: 'hex',
});

function joined(sql: Sql, parts: readonly PendingQuery<Row[]>[]): PendingQuery<Row[]> {
  return parts.reduce((acc, part) => sql`${acc}, ${part}`);
}

/**
 * Select the next eligible rows (fixpoint, past the hot window, no dependents) in key order,
 * after `after` when given, and serialize them in the database: every column read as text so
 * microseconds, numeric digits and integers beyond 2^53 (bigint or inside jsonb) survive, and
 * `row_to_json` builds each line. Rows come back raw (key, xmin, line, timestamp, ctid), so
 * Node only concatenates bytes: measured ~2× faster than aggregating the batch into one value
 * with string_agg, and a window for the oldest/newest timestamp made PostgreSQL buffer the
 * whole batch once more.
 * `xmin` comes along so the delete can insist on the very row versions archived.
 */
export async function selectBatch(sql: Sql, plan: TablePlan, hotWindowDays: number, limit: number, after: string | undefined): Promise<SelectedBatch> {
  const { spec } = plan;
  const key = sql(`${ALIAS}.${spec.keyColumn}`);
  const columns = joined(sql, plan.columns.map((c) => sql`${sql(`${ALIAS}.${c}`)}::text as ${sql(c)}`));
  const rows = await sql`
    select ${key}::text, ${sql(`${ALIAS}.xmin`)}::text, row_to_json(c)::text, ${sql(`${ALIAS}.${spec.timestampColumn}`)}::text, ${sql(`${ALIAS}.ctid`)}::text
    from ${sql(spec.table)} as ${sql(ALIAS)}
    cross join lateral (select ${columns}) as c
    where ${eligibleSql(sql, spec, hotWindowDays)} ${after === undefined ? sql`` : sql`and ${key} > ${after}`}
    order by ${key}
    limit ${limit}`.raw();
  // Raw: each value is the wire bytes (UTF-8), so the lines go into the body and the ids into
  // the delete's array literals without being decoded to JS strings and encoded back.
  const parts = new Array<Buffer>(rows.length * 2);
  const ctids = arrayLiteral(rows.length);
  const keys = arrayLiteral(rows.length);
  const xmins = arrayLiteral(rows.length);
  let length = 0;
  let minTs = '';
  let maxTs = '';
  let minOrder = '';
  let maxOrder = '';
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as unknown as [Buffer, Buffer, Buffer, Buffer, Buffer];
    keys.add(row[0]);
    xmins.add(row[1]);
    ctids.add(row[4]);
    parts[2 * i] = row[2];
    parts[2 * i + 1] = NEWLINE;
    length += row[2].length + 1;
    const ts = row[3].toString('latin1');
    const order = timestampOrder(ts);
    if (i === 0 || order < minOrder) [minTs, minOrder] = [ts, order];
    if (i === 0 || order > maxOrder) [maxTs, maxOrder] = [ts, order];
  }
  const first = rows[0];
  const last = rows[rows.length - 1];
  return {
    count: rows.length,
    body: Buffer.concat(parts, length),
    minKey: first?.[0]!.toString('utf8') ?? '',
    maxKey: last?.[0]!.toString('utf8') ?? '',
    ctids: ctids.done(),
    keys: keys.done(),
    xmins: xmins.done(),
    minTs,
    maxTs,
  };
}

const NEWLINE = Buffer.from('\n');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = Buffer.from('{"');
const SEPARATOR = Buffer.from('","');
const CLOSE = Buffer.from('"}');

/** A PostgreSQL array literal of quoted elements, assembled from wire bytes. */
function arrayLiteral(size: number): { add(value: Buffer): void; done(): string } {
  const parts: Buffer[] = new Array<Buffer>(size * 2 + 1);
  let n = 0;
  return {
    add(value) {
      parts[n] = n === 0 ? OPEN : SEPARATOR;
      n++;
      // Inside double quotes only '"' and '\' need a backslash (text keys may hold them).
      parts[n++] = value.includes(QUOTE) || value.includes(BACKSLASH) ? Buffer.from(value.toString('utf8').replace(/["\\]/g, '\\$&'), 'utf8') : value;
    },
    done() {
      if (n === 0) return '{}';
      parts[n++] = CLOSE;
      return Buffer.concat(parts.slice(0, n)).toString('utf8');
    },
  };
}

/**
 * A string that sorts like the timestamptz PostgreSQL printed (ISO, UTC). Within four-digit AD
 * years the text itself sorts right (`…:05+00` < `…:05.5+00` because '+' < '.'); infinities,
 * BC dates and longer years are mapped around it.
 */
export function timestampOrder(text: string): string {
  if (text === '-infinity') return '0';
  if (text === 'infinity') return '3';
  if (text.endsWith(' BC')) return `1${text}`;
  const dash = text.indexOf('-');
  return `2${text.slice(0, dash).padStart(6, '0')}${text.slice(dash)}`;
}


export interface LedgerEntry {
  readonly archiveId: string;
  readonly table: string;
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
  readonly rowCount: number;
  readonly minKey: string;
  readonly maxKey: string;
  readonly minTs: string;
  readonly maxTs: string;
}

/**
 * Record the batch in the ledger and delete exactly the archived row versions, in the caller's
 * transaction, through the owner's gate `archive_prune_batch` (sql/000002_prune_gate.sql): the
 * runtime role holds no DELETE on the table. Rows are reached by the `ctid`s the select saw (a
 * TID scan: no index descent per row), only while the registered eligibility predicate
 * (fixpoint, hot window, guards) still holds, and the database counts how many of the deleted
 * rows carry exactly a (key, `xmin`) pair the select archived. A row updated since (new
 * version, new `xmin`, even if the executor followed the update chain), moved off its fixpoint,
 * given a dependent, or a slot reused by another row, does not count; the caller's count check
 * then rolls the whole batch back, ledger row included.
 */
export async function pruneArchived(tx: TransactionSql, entry: LedgerEntry, hotWindowDays: number, batch: Pick<SelectedBatch, 'ctids' | 'keys' | 'xmins'>): Promise<{ readonly deleted: number; readonly exact: number }> {
  try {
    const [row] = await tx<{ deleted: number; exact: number }[]>`
      select deleted, exact from archive_prune_batch(
        ${entry.archiveId}::uuid, ${entry.table}, ${entry.key}, ${entry.sha256}, ${entry.bytes}::bigint, ${entry.rowCount}::int,
        ${entry.minKey}, ${entry.maxKey}, ${entry.minTs}::timestamptz, ${entry.maxTs}::timestamptz,
        ${batch.ctids}::tid[], ${batch.keys}::text[], ${batch.xmins}::text[], ${hotWindowDays}::int)`;
    return { deleted: row!.deleted, exact: row!.exact };
  } catch (error) {
    // The gate's own refusal of a batch that no longer matches: counted like the caller's check.
    if ((error as { code?: string }).code !== 'CRR01') throw error;
    const detail = JSON.parse((error as { detail?: string }).detail ?? '{}') as { deleted?: number; exact?: number };
    return { deleted: detail.deleted ?? 0, exact: detail.exact ?? 0 };
  }
}
