import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import { ALIAS, eligibleSql, type Binder } from './predicates.ts';
import type { TablePlan } from './catalog.ts';

/** One selected batch: its ids and span (its body went to the sink as it was read). */
export interface SelectedBatch {
  readonly count: number;
  /** Bytes of NDJSON written to the sink: the batch's uncompressed body. */
  readonly rawBytes: number;
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

/** `parts` one after another, with `separator` (a comma by default) between them. */
function joined(sql: Sql, parts: readonly PendingQuery<Row[]>[], separator: PendingQuery<Row[]> = sql`, `): PendingQuery<Row[]> {
  return parts.reduce((acc, part) => sql`${acc}${separator}${part}`);
}

/** Session settings the batch COPY reads its values from (COPY takes no bind parameters). */
const SETTING_PREFIX = 'craig_archive.p';

/**
 * A {@link Binder} for the batch COPY: each value is written by one `set_config` statement (as a
 * bound parameter) just before, and the COPY refers to it as `current_setting(…)` cast to the
 * type it is compared with. A missing setting is an error, never a NULL.
 *
 * Each reference is a scalar subquery, which PostgreSQL runs once per statement (an InitPlan).
 * A bare `current_setting(…)` is only stable, so a filter evaluated it, its cast and (for a
 * fixpoint's values) the parse of its array literal again for every row it checked: 26 ms of a
 * 16,667-row batch's 143 ms with a terminal-status fixpoint, ~2 ms with none (ADR-073). The
 * outer cast keeps `= any(…)` an array comparison, not an `ANY (subquery)`.
 */
function settingsBinder(sql: Sql, plan: TablePlan) {
  const sets: PendingQuery<Row[]>[] = [];
  const ref = (value: PendingQuery<Row[]>, cast: string) => {
    const name = `${SETTING_PREFIX}${sets.length}`;
    sets.push(sql`set_config(${name}, ${value}, false)`);
    const type = sql.unsafe(cast);
    return sql`(select current_setting(${sql.unsafe(`'${name}'`)}, false)::${type})::${type}`;
  };
  const typeOf = (column: string) => {
    const type = plan.types.get(column);
    if (type === undefined) throw new Error(`archive batch: no type known for ${plan.spec.table}.${column}`);
    return type;
  };
  const binder: Binder = {
    textArray: (values, column) => ref(sql`${values as string[]}::text[]::text`, `${typeOf(column)}[]`),
    int: (value) => ref(sql`${value}::int::text`, 'integer'),
  };
  return {
    binder,
    key: (value: string) => ref(sql`${value}::text`, typeOf(plan.spec.keyColumn)),
    prelude: () => (sets.length === 0 ? undefined : sql`select ${joined(sql, sets)}`),
  };
}

/**
 * Select the next eligible rows (fixpoint, past the hot window, no dependents) in key order,
 * after `after` when given, and stream them out with `COPY (…) TO STDOUT (FORMAT binary)`
 * (ADR-066). Every column is read as its PostgreSQL text (the reader's session settings make
 * that canonical), so microseconds, numeric digits and integers beyond 2^53 (bigint or inside
 * jsonb) survive. PostgreSQL writes each row's JSON line itself ({@link jsonLineSql}, ADR-072):
 * each row arrives as five length-prefixed fields (xmin, ctid, key, timestamp, line), and Node
 * copies the line into the body and the ids into the delete's array literals by offset, with no
 * per-row objects. `xmin` comes along so the delete can insist on the very row versions archived.
 *
 * The body (NDJSON, UTF-8, newline-terminated: one JSON object per row, columns in table order,
 * every value its PostgreSQL text or null) is never held whole: it goes to `sink` in pieces of
 * {@link BODY_PIECE_BYTES} as the rows arrive (the engine's sink is the object's compressor).
 */
export async function selectBatch(sql: Sql, plan: TablePlan, hotWindowDays: number, limit: number, after: string | undefined, sink: BodySink): Promise<SelectedBatch> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`archive batch limit must be a positive integer: ${limit}`);
  const { spec } = plan;
  const key = sql(`${ALIAS}.${spec.keyColumn}`);
  const settings = settingsBinder(sql, plan);
  const where = sql`${eligibleSql(sql, spec, hotWindowDays, settings.binder)} ${after === undefined ? sql`` : sql`and ${key} > ${settings.key(after)}`}`;
  const prelude = settings.prelude();
  if (prelude) await prelude;
  const stream = await sql`
    copy (
      select ${sql(`${ALIAS}.xmin`)}::text, ${sql(`${ALIAS}.ctid`)}::text, ${key}::text,
             ${sql(`${ALIAS}.${spec.timestampColumn}`)}::text, ${jsonLineSql(sql, plan)}
      from ${sql(spec.table)} as ${sql(ALIAS)}
      where ${where}
      order by ${key}
      limit ${sql.unsafe(String(limit))}
    ) to stdout with (format binary)`.readable();
  const rows = new BatchRows(sink, plan);
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (chunk: Buffer) => {
      try {
        rows.push(chunk);
        // The compressor is behind: stop reading (the socket with it) until it catches up, so
        // a batch's pending body stays within the sink's bound instead of piling up in it.
        if (rows.full && !stream.isPaused()) {
          stream.pause();
          sink.whenDrained(() => {
            rows.full = false;
            stream.resume();
          });
        }
      } catch (error) {
        // A malformed stream: the statement fails; the cycle closes this connection with it.
        stream.destroy(error as Error);
      }
    });
    stream.once('error', reject);
    stream.once('end', () => {
      try {
        rows.end();
        resolve();
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
  return rows.batch();
}

/** Where a batch's body goes, piece by piece; a piece is never touched again once written. */
export interface BodySink {
  /** `false`: the sink is full; the reader pauses until `whenDrained` calls back. */
  write(piece: Buffer): boolean;
  whenDrained(resume: () => void): void;
  /** A buffer of at least {@link BODY_PIECE_BYTES} to fill next (the sink may recycle written ones). */
  piece(): Buffer;
}

/**
 * The expression that writes a row's JSON line in the database: `{"col":value,…}` and a newline,
 * the columns in table order, each value the JSON string of the column's text or `null`. A
 * column whose type's text never holds a quote, a backslash or a control character
 * ({@link PLAIN_TYPES}) is wrapped in quotes as it is; any other goes through `to_json(text)`,
 * PostgreSQL's own JSON string escaping. (Node wrote the line before ADR-072: 1.4–2.5 µs a row
 * of the engine's main thread, its bottleneck, where the statement spends ~1 µs of the server's.)
 */
function jsonLineSql(sql: Sql, plan: TablePlan): PendingQuery<Row[]> {
  const parts = plan.columns.map((c, i) => {
    const name = sql.unsafe(sqlLiteral(`${i === 0 ? '{' : ','}${JSON.stringify(c)}:`));
    const text = sql`${sql(`${ALIAS}.${c}`)}::text`;
    const value = PLAIN_TYPES.has(plan.types.get(c) ?? '') ? sql`'"' || ${text} || '"'` : sql`to_json(${text})::text`;
    return sql`${name} || coalesce(${value}, 'null')`;
  });
  return sql`${joined(sql, parts, sql` || `)} || ${sql.unsafe(sqlLiteral('}\n'))}`;
}

/** `text` as an escape-string literal (`E'…'`): the same whatever `standard_conforming_strings` says. */
function sqlLiteral(text: string): string {
  return `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The body's piece size: large enough that the compressor's per-write cost is noise. */
export const BODY_PIECE_BYTES = 256 * 1024;

const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** A byte buffer that grows (×1.5) as it is appended to. */
class Bytes {
  private buf: Buffer;
  length = 0;
  constructor(initial: number | Buffer) {
    this.buf = typeof initial === 'number' ? Buffer.allocUnsafe(Math.max(64, initial)) : initial;
  }
  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.length + n, Math.ceil(this.buf.length * 1.5)));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  copy(src: Buffer, start: number, end: number): void {
    this.reserve(end - start);
    this.length = copyBytes(src, start, end, this.buf, this.length);
  }
  byte(b: number): void {
    this.reserve(1);
    this.buf[this.length++] = b;
  }
  done(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/**
 * Copy src[start, end) to target at `at`; returns the end offset. Short runs (ids, timestamps)
 * in a loop: `Buffer#copy` makes a typed-array view per call, which costs more than the bytes.
 */
function copyBytes(src: Buffer, start: number, end: number, target: Buffer, at: number): number {
  if (end - start > 64) return at + src.copy(target, at, start, end);
  for (let i = start; i < end; i++) target[at++] = src[i]!;
  return at;
}

/** A PostgreSQL array literal of quoted elements, assembled from wire bytes. */
class ArrayLiteral {
  private readonly out: Bytes;
  private n = 0;
  constructor(capacity: number) {
    this.out = new Bytes(capacity);
    this.out.byte(OPEN_BRACE);
  }
  /** `plain`: the text holds no quote or backslash (a number, a uuid, a tid), so it is copied unscanned. */
  add(src: Buffer, start: number, end: number, plain = false): void {
    if (this.n++ > 0) this.out.byte(COMMA);
    this.out.byte(QUOTE);
    // Inside double quotes only '"' and '\' need a backslash (text keys may hold them).
    if (!plain) {
      for (let i = start; i < end; i++) {
        const b = src[i]!;
        if (b === QUOTE || b === BACKSLASH) {
          this.out.copy(src, start, i);
          this.out.byte(BACKSLASH);
          start = i;
        }
      }
    }
    this.out.copy(src, start, end);
    this.out.byte(QUOTE);
  }
  done(): string {
    this.out.byte(CLOSE_BRACE);
    return this.out.done().toString('utf8');
  }
}

/** The oldest or newest timestamp seen, in the order of {@link timestampOrder} (or, sign 0, the last bytes offered). */
class Extreme {
  private bytes = Buffer.allocUnsafe(64);
  private length = -1;
  private plain = false;
  /** sign 0: every offer is kept (the last one wins). */
  constructor(private readonly sign: 1 | -1 | 0) {}
  /**
   * Offer src[start, end); kept when it sorts before (sign -1) or after (sign 1) the current.
   * `plain`: the caller's {@link isPlainTimestamp} of these bytes (asked once per row for both ends).
   */
  offer(src: Buffer, start: number, end: number, plain = false): void {
    if (this.length >= 0 && this.sign !== 0) {
      const cmp = plain && this.plain
        ? compareBytes(src, start, end, this.bytes, this.length)
        : compareText(timestampOrder(src.toString('latin1', start, end)), timestampOrder(this.text()));
      if (cmp * this.sign <= 0) return;
    }
    if (end - start > this.bytes.length) this.bytes = Buffer.allocUnsafe(end - start);
    this.length = copyBytes(src, start, end, this.bytes, 0);
    this.plain = plain;
  }
  text(encoding: 'latin1' | 'utf8' = 'latin1'): string {
    return this.length < 0 ? '' : this.bytes.toString(encoding, 0, this.length);
  }
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** src[start, end) against other[0, length) byte by byte (short texts: a loop beats Buffer#compare's native call). */
function compareBytes(src: Buffer, start: number, end: number, other: Buffer, length: number): number {
  const n = Math.min(end - start, length);
  for (let i = 0; i < n; i++) {
    const d = src[start + i]! - other[i]!;
    if (d !== 0) return d;
  }
  return end - start - length;
}

/** A four-digit AD year (`2026-…`, no ` BC`): such texts sort as their bytes do. */
function isPlainTimestamp(src: Buffer, start: number, end: number): boolean {
  const first = src[start]!;
  return end - start >= 10 && src[start + 4] === 0x2d && first >= 0x30 && first <= 0x39 && src[end - 1] !== 0x43;
}

/** The COPY's fields: the row version, its slot, key and timestamp texts, and its JSON line. */
const XMIN = 0;
const CTID = 1;
const KEY = 2;
const TS = 3;
const LINE = 4;
const FIELDS = 5;

/**
 * The rows of one batch from a binary COPY stream: a header, then per row a field count and
 * each field as a length (-1: NULL) and its bytes, then a trailer (-1). Chunks may split a row
 * anywhere. Fields: xmin, ctid, key and timestamp as text, then the row's JSON line.
 */
class BatchRows {
  private body: Bytes;
  private rawBytes = 0;
  /** The sink refused more: the reader pauses the stream until it drains. */
  full = false;
  private readonly keys = new ArrayLiteral(16 * 1024);
  private readonly xmins = new ArrayLiteral(16 * 1024);
  private readonly ctids = new ArrayLiteral(16 * 1024);
  private readonly minTs = new Extreme(-1);
  private readonly maxTs = new Extreme(1);
  /** The batch is in key order: the last row's key is its greatest. */
  private readonly lastKey = new Extreme(0);
  /** The key's text never holds a quote or backslash (a plain type): its array element is copied unscanned. */
  private readonly plainKey: boolean;
  private readonly starts = new Int32Array(FIELDS);
  private readonly ends = new Int32Array(FIELDS);
  private carry: Buffer | undefined;
  private header = false;
  private trailer = false;
  private count = 0;
  private minKey = '';

  constructor(
    private readonly sink: BodySink,
    private readonly plan: TablePlan,
  ) {
    this.body = new Bytes(sink.piece());
    this.plainKey = PLAIN_TYPES.has(plan.types.get(plan.spec.keyColumn) ?? '');
  }

  push(chunk: Buffer): void {
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    let pos = 0;
    if (!this.header) {
      if (buf.length < 19) return void (this.carry = buf);
      if (!buf.subarray(0, COPY_SIGNATURE.length).equals(COPY_SIGNATURE)) throw new Error('archive batch: the COPY stream does not start with the binary signature');
      const extension = buf.readInt32BE(15);
      if (buf.length < 19 + extension) return void (this.carry = buf);
      pos = 19 + extension;
      this.header = true;
    }
    const { starts, ends } = this;
    rows: while (pos + 2 <= buf.length) {
      if (this.trailer) throw new Error('archive batch: data after the COPY trailer');
      const n = buf.readInt16BE(pos);
      if (n === -1) {
        this.trailer = true;
        pos += 2;
        continue;
      }
      if (n !== FIELDS) throw new Error(`archive batch: a COPY row of ${n} fields, expected ${FIELDS}`);
      let p = pos + 2;
      for (let f = 0; f < FIELDS; f++) {
        if (p + 4 > buf.length) break rows;
        const length = buf.readInt32BE(p);
        p += 4;
        if (length < 0) {
          starts[f] = -1;
          ends[f] = -1;
          continue;
        }
        if (p + length > buf.length) break rows;
        starts[f] = p;
        ends[f] = p + length;
        p += length;
      }
      this.row(buf);
      pos = p;
    }
    if (pos < buf.length) this.carry = Buffer.from(buf.subarray(pos));
  }

  private row(buf: Buffer): void {
    const { starts, ends } = this;
    if (starts[KEY]! < 0) throw new Error(`archive batch: a row of ${this.plan.spec.table} has a NULL ${this.plan.spec.keyColumn}`);
    if (starts[LINE]! < 0) throw new Error(`archive batch: a row of ${this.plan.spec.table} came without its JSON line`);
    if (this.count === 0) this.minKey = buf.toString('utf8', starts[KEY], ends[KEY]);
    this.lastKey.offer(buf, starts[KEY]!, ends[KEY]!);
    this.count++;
    this.xmins.add(buf, starts[XMIN]!, ends[XMIN]!, true);
    this.ctids.add(buf, starts[CTID]!, ends[CTID]!, true);
    this.keys.add(buf, starts[KEY]!, ends[KEY]!, this.plainKey);
    const plainTs = isPlainTimestamp(buf, starts[TS]!, ends[TS]!);
    this.minTs.offer(buf, starts[TS]!, ends[TS]!, plainTs);
    this.maxTs.offer(buf, starts[TS]!, ends[TS]!, plainTs);
    const size = ends[LINE]! - starts[LINE]!;
    if (this.body.length > 0 && this.body.length + size > BODY_PIECE_BYTES) this.flush();
    this.body.copy(buf, starts[LINE]!, ends[LINE]!);
  }

  private flush(): void {
    if (this.body.length === 0) return;
    this.rawBytes += this.body.length;
    if (!this.sink.write(this.body.done())) this.full = true;
    this.body = new Bytes(this.sink.piece());
  }

  end(): void {
    if (!this.header || !this.trailer || this.carry) throw new Error('archive batch: the COPY stream ended before its trailer');
    this.flush();
  }

  batch(): SelectedBatch {
    const empty = this.count === 0;
    return {
      count: this.count,
      rawBytes: this.rawBytes,
      minKey: this.minKey,
      maxKey: this.lastKey.text('utf8'),
      ctids: empty ? '{}' : this.ctids.done(),
      keys: empty ? '{}' : this.keys.done(),
      xmins: empty ? '{}' : this.xmins.done(),
      minTs: this.minTs.text(),
      maxTs: this.maxTs.text(),
    };
  }
}

/**
 * Types (as `format_type` names them) whose text form, under {@link CANONICAL_OUTPUT}, is only
 * digits, letters, `-+.: ` and never a quote, backslash or control character: the JSON line
 * quotes their text as it is, and the gate's array literals take it unscanned. Domains and
 * everything else go through `to_json`.
 */
const PLAIN_TYPES: ReadonlySet<string> = new Set(['smallint', 'integer', 'bigint', 'numeric', 'real', 'double precision', 'oid', 'uuid', 'boolean', 'date', 'timestamp with time zone', 'timestamp without time zone', 'time without time zone']);
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
        ${entry.minKey}, ${entry.maxKey}, ${entry.minTs}::text::timestamptz, ${entry.maxTs}::text::timestamptz,
        ${batch.ctids}::tid[], ${batch.keys}::text[], ${batch.xmins}::text[], ${hotWindowDays}::int)`;
    return { deleted: row!.deleted, exact: row!.exact };
  } catch (error) {
    // The gate's own refusal of a batch that no longer matches: counted like the caller's check.
    if ((error as { code?: string }).code !== 'CRR01') throw error;
    const detail = JSON.parse((error as { detail?: string }).detail ?? '{}') as { deleted?: number; exact?: number };
    return { deleted: detail.deleted ?? 0, exact: detail.exact ?? 0 };
  }
}
