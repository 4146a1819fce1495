import { createArchiveEngine, type CycleReport } from '@craig/retention';
import type { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { archiveContext } from '../archive-context.ts';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { printTable } from '../bench/measure.ts';
import { formatBytes } from '../progress.ts';

export const archiveCommand: Command = {
  name: 'archive',
  summary: "run one archive-then-prune cycle of a service now and print per-table counts",
  usage: `pnpm xtask archive <service> [--json]

Runs one archive cycle with the service's settings (CRAIG_<SERVICE>__DATABASE_URL, the
OBJECT_STORE_* and ARCHIVE_* keys) and its registered archive specs, in FK order: each batch of
eligible rows (past the hot window, at its fixpoint, no dependents) is written to the object
store as gzip NDJSON, digest-verified, and deleted in the transaction that records it in
archive_ledger. Prints rows, batches, bytes and the outcome per table; --json prints the cycle
report. Does nothing (exit 0) while another archiver holds the service's lease. Exits 1 when a
table failed (the failed batch's rows stay hot). Batch log lines go to stderr.`,
  async run(ctx) {
    const { positionals, flags } = parseArgs(ctx.argv, { flags: ['json'] });
    const [name, ...extra] = positionals;
    if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
    const logger = pino({ level: 'info', base: { service: name } }, ctx.stderr);
    const archive = archiveContext(ctx, name, logger, { requireSpecs: true });
    try {
      const engine = createArchiveEngine({
        service: archive.service,
        databaseUrl: archive.settings.databaseUrl,
        store: archive.store,
        specs: archive.specs,
        hotWindowDays: archive.settings.archive.hotWindowDays,
        prefix: archive.settings.archive.prefix,
        registry: new Registry(),
        logger,
      });
      const report = await engine.runCycle({ signal: ctx.signal });
      if (flags.has('json')) writeLine(ctx.stdout, JSON.stringify(report, null, 2));
      else printReport(ctx.stdout, report);
      return report.tables.some((t) => t.outcome === 'failed') ? 1 : 0;
    } finally {
      archive.store.close();
    }
  },
};

function printReport(out: Writable, report: CycleReport): void {
  if (report.status === 'lease_held') {
    writeLine(out, `${report.service}: another archiver holds the lease; nothing done`);
    return;
  }
  printTable(
    out,
    ['table', 'rows', 'batches', 'bytes', 'outcome'],
    report.tables.map((t) => [t.table, t.rows, t.batches, formatBytes(t.bytes), t.error ? `${t.outcome}: ${t.error.message}` : t.outcome]),
  );
  const rows = report.tables.reduce((a, t) => a + t.rows, 0);
  writeLine(out, `${report.service}: ${report.status}, ${rows} rows archived in ${report.ms} ms`);
}
