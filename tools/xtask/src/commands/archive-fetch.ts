import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { createClient } from '@craig/db';
import { ArchiveIntegrityError, readArchiveObject, readLedger, verifyArchive, type LedgerFilter } from '@craig/retention';
import pino from 'pino';
import { archiveContext } from '../archive-context.ts';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { formatBytes, progressBar } from '../progress.ts';

export const archiveFetchCommand: Command = {
  name: 'archive-fetch',
  summary: "read a service's archive back (verified against its ledger), or --verify all of it and list orphans",
  usage: `pnpm xtask archive-fetch <service> [--table T] [--since ISO] [--until ISO] [--out FILE] [--verify]

Resolves the service's archive_ledger (CRAIG_<SERVICE>__DATABASE_URL), downloads each archive
object from the object store, checks its SHA-256 and row count against the ledger, and writes
its rows as NDJSON to FILE (stdout by default): one JSON object per row, "_table" and
"_archive_id" first, then every column as PostgreSQL's text for it (or null). --table keeps one
table; --since/--until keep rows whose timestamp column is in [since, until). A progress bar
goes to stderr. A missing object or a digest or row-count mismatch is reported by key, and the
command exits 1 (the other objects are still written).

--verify writes no rows: it checks every ledger entry in range the same way, then lists
orphan objects (under <prefix>/<service>/ but named by no ledger row: left by a crash or a
rolled-back batch; their rows are still hot or were archived again). Exits 1 when an entry
failed; orphans alone exit 0. See docs/runbooks/archive-verify.md.`,
  async run(ctx) {
    const { positionals, flags, options } = parseArgs(ctx.argv, { flags: ['verify'], options: ['table', 'since', 'until', 'out'] });
    const [name, ...extra] = positionals;
    if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
    const filter: LedgerFilter = {
      ...(options.has('table') ? { table: options.get('table')! } : {}),
      ...(options.has('since') ? { since: instant('since', options.get('since')!) } : {}),
      ...(options.has('until') ? { until: instant('until', options.get('until')!) } : {}),
    };
    if (filter.since && filter.until && filter.since >= filter.until) throw new UsageError('--since must be before --until');
    if (flags.has('verify') && options.has('out')) throw new UsageError('--verify writes no rows; drop --out');

    const logger = pino({ level: 'warn' }, ctx.stderr);
    const archive = archiveContext(ctx, name, logger, { requireSpecs: false });
    const sql = createClient(archive.settings.databaseUrl, { service: `${archive.service}:archive-fetch`, max: 1 });
    try {
      if (flags.has('verify')) return await verify(ctx.stdout, ctx.stderr, archive, sql, filter, ctx.signal);
      const out = options.has('out') ? createWriteStream(options.get('out')!) : ctx.stdout;
      try {
        return await fetchRows(out, ctx.stderr, archive, sql, filter, ctx.signal);
      } finally {
        if (out !== ctx.stdout) {
          out.end();
          await once(out, 'close');
        }
      }
    } finally {
      archive.store.close();
      await sql.end({ timeout: 5 });
    }
  },
};

function instant(flag: string, value: string): Date {
  const date = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(date.getTime())) throw new UsageError(`--${flag} ${JSON.stringify(value)} is not an ISO 8601 date or timestamp`);
  return date;
}

type Archive = ReturnType<typeof archiveContext>;
type Client = ReturnType<typeof createClient>;

async function fetchRows(out: Writable, err: Writable, archive: Archive, sql: Client, filter: LedgerFilter, signal: AbortSignal): Promise<number> {
  const entries = await readLedger(sql, filter);
  const timestampOf = new Map(archive.specs.map((s) => [s.table, s.timestampColumn]));
  const bar = progressBar(err, `archive-fetch ${archive.service}`, entries.length, 'objects');
  const problems: ArchiveIntegrityError[] = [];
  let rows = 0;
  let bytes = 0;
  for (const [i, entry] of entries.entries()) {
    signal.throwIfAborted();
    const column = timestampOf.get(entry.table);
    try {
      const fetched = await readArchiveObject(archive.store, entry, {
        signal,
        ...(column && (filter.since || filter.until) ? { rowFilter: { column, ...(filter.since ? { since: filter.since } : {}), ...(filter.until ? { until: filter.until } : {}) } } : {}),
      });
      let chunk = '';
      for (const row of fetched) chunk += `${JSON.stringify({ _table: entry.table, _archive_id: entry.archiveId, ...row })}\n`;
      if (chunk && !out.write(chunk)) await once(out, 'drain');
      rows += fetched.length;
      bytes += entry.bytes;
    } catch (error) {
      if (!(error instanceof ArchiveIntegrityError)) throw error;
      problems.push(error);
    }
    bar.update(i + 1, `${rows} rows, ${formatBytes(bytes)}`);
  }
  bar.finish(`${rows} rows, ${formatBytes(bytes)}`);
  for (const p of problems) writeLine(err, `error: ${p.message}`);
  writeLine(err, `${archive.service}: ${rows} rows from ${entries.length - problems.length} of ${entries.length} objects${problems.length ? `; ${problems.length} failed verification` : ''}`);
  return problems.length > 0 ? 1 : 0;
}

async function verify(out: Writable, err: Writable, archive: Archive, sql: Client, filter: LedgerFilter, signal: AbortSignal): Promise<number> {
  let bar: ReturnType<typeof progressBar> | undefined;
  const report = await verifyArchive({
    sql,
    store: archive.store,
    service: archive.service,
    prefix: archive.settings.archive.prefix,
    filter,
    signal,
    onProgress: (done, total, bytes) => {
      bar ??= progressBar(err, `archive-fetch --verify ${archive.service}`, total, 'objects');
      bar.update(done, formatBytes(bytes));
    },
  });
  bar?.finish(formatBytes(report.bytes));
  writeLine(out, `${archive.service}: ${report.checked} ledger entries checked, ${report.rows} rows, ${formatBytes(report.bytes)}`);
  for (const p of report.problems) writeLine(out, `FAILED ${p.key}: ${p.problem} (${p.message})`);
  for (const o of report.orphans) writeLine(out, `orphan ${o.key} (${formatBytes(o.size)})`);
  writeLine(out, `${report.problems.length} failed, ${report.orphans.length} orphan object${report.orphans.length === 1 ? '' : 's'}`);
  return report.problems.length > 0 ? 1 : 0;
}
