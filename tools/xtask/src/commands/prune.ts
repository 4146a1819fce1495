import { createClient, walCompressionOf } from '@craig/db';
import { previewLocalSweep, previewTransportPrune, pruneTransportTables, resumePrune, runLocalSweep, TRANSPORT_TABLES, type LocalSweepStatus, type PruneLatch, type TablePrunePreview, type TablePruneStatus } from '@craig/mq';
import pino from 'pino';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { knownServiceNames, loadToolSettings, localSweepsOf, serviceEntry } from '../services.ts';

export const pruneCommand: Command = {
  name: 'prune',
  summary: "run, preview (--dry-run) or resume (--resume <table>) a service's transport prune and its local sweeps",
  usage: `pnpm xtask prune <service> [--dry-run] [--resume <table>] [--json]

Reads the service's settings (CRAIG_<SERVICE>__DATABASE_URL and the retention windows
EVENT_OUTBOX_RETENTION_DAYS / EVENT_INBOX_RETENTION_DAYS, and the windows of the service's
own terminal-state sweeps, e.g. financial's RECONCILE_SETTLED_RETENTION_DAYS) like the
service does; the admin token, HTTP and transport settings are not needed.

  (no option)       run one transport prune cycle now, then one cycle of each of the
                    service's local sweeps, each under the same advisory lock as the
                    service's own (if one of them is running, that cycle is skipped)
  --dry-run         report what a cycle would delete per table, and whether it would hit the
                    per-cycle cap and latch; deletes nothing
  --resume <table>  clear the cap latch of event_outbox, event_inbox or one of the service's
                    local sweep targets (financial: subsidy_reconcile_queue) so the next
                    cycle deletes again. A latched sweep resumes only this way: read
                    docs/runbooks/prune-cap-latched.md first.
  --json            print the result as JSON (per table: status, deleted, batches, latch;
                    for --dry-run: eligible, wouldDelete, wouldLatch) instead of lines.`,
  async run(ctx) {
    const { positionals, flags, options } = parseArgs(ctx.argv, { flags: ['dry-run', 'json'], options: ['resume'] });
    const json = flags.has('json');
    const print = (value: unknown) => writeLine(ctx.stdout, JSON.stringify(value, null, 2));
    const [name, ...extra] = positionals;
    if (!name || extra.length > 0) throw new UsageError('expected exactly one service name');
    const resume = options.get('resume');
    if (resume !== undefined && flags.has('dry-run')) throw new UsageError('--resume and --dry-run do not go together');
    const entry = serviceEntry(name);
    if (!entry) throw new UsageError(`unknown service "${name}" (known: ${knownServiceNames().join(', ')})`);
    const settings = loadToolSettings(entry, ctx.env);
    const locals = localSweepsOf(entry, settings);
    const targets = [...TRANSPORT_TABLES, ...locals.map((l) => l.definition.name)];
    if (resume !== undefined && !targets.includes(resume)) throw new UsageError(`--resume takes ${orList(targets)}, not "${resume}"`);
    const { retention } = settings;
    const service = `${name}:xtask`;
    const width = Math.max(12, ...targets.map((t) => t.length));

    if (resume !== undefined || flags.has('dry-run')) {
      const sql = createClient(settings.databaseUrl, { service, max: 1 });
      try {
        if (resume !== undefined) {
          const cleared = await resumePrune(sql, resume);
          if (json) {
            print({ service: name, resumed: resume, wasLatched: cleared !== undefined, latch: cleared ? latchJson(cleared) : null });
            return 0;
          }
          writeLine(
            ctx.stdout,
            cleared
              ? `${name}: resumed ${resume} (latched since ${cleared.latchedAt.toISOString()} after deleting ${cleared.deleted} rows in one cycle, cap ${cleared.cap}); the next cycle deletes again`
              : `${name}: ${resume} was not latched; nothing to resume`,
          );
          return 0;
        }
        const previews: Array<Omit<TablePrunePreview, 'table'> & { readonly table: string; readonly windowDays: number }> = (await previewTransportPrune(sql, retention)).map((t) => ({
          ...t,
          windowDays: t.table === 'event_outbox' ? retention.outboxDays : retention.inboxDays,
        }));
        for (const local of locals) previews.push({ table: local.definition.name, windowDays: local.windowDays, ...(await previewLocalSweep(sql, local.definition, local.windowDays)) });
        if (json) {
          print({
            service: name,
            dryRun: true,
            tables: previews.map((t) => ({ table: t.table, windowDays: t.windowDays, disabled: t.disabled, eligible: t.eligible, wouldDelete: t.wouldDelete, wouldLatch: t.wouldLatch, latch: t.latch ? latchJson(t.latch) : null })),
          });
          return 0;
        }
        writeLine(ctx.stdout, `${name}: dry run (outbox window ${retention.outboxDays} d, inbox window ${retention.inboxDays} d${locals.map((l) => `, ${l.definition.name} window ${l.windowDays} d`).join('')}; nothing deleted)`);
        for (const t of previews) {
          const state = t.disabled
            ? 'disabled (window 0)'
            : t.latch
              ? `latched since ${t.latch.latchedAt.toISOString()}: would delete nothing (${t.eligible} eligible); resume with --resume ${t.table}`
              : `would delete ${t.wouldDelete} rows${t.wouldLatch ? ' and then hit the cap and latch (more are eligible)' : ''}`;
          writeLine(ctx.stdout, `  ${t.table.padEnd(width)}  ${state}`);
        }
        return 0;
      } finally {
        await sql.end({ timeout: 5 });
      }
    }

    const result = await pruneTransportTables({ databaseUrl: settings.databaseUrl, service, retention, logger: pino({ level: 'silent' }), signal: ctx.signal, walCompression: walCompressionOf(settings.outbox.sweepWalCompression) });
    if (json) {
      const tables: Array<Record<string, unknown>> = result.tables.map((t) => tableJson(t, t.table === 'event_outbox' ? retention.outboxDays : retention.inboxDays));
      for (const local of locals) {
        if (ctx.signal?.aborted) break;
        const table = local.definition.name;
        const run = await runLocalSweep(local.definition, { databaseUrl: settings.databaseUrl, windowDays: local.windowDays, applicationName: `${service}:${table}-sweep`, ...(ctx.signal ? { signal: ctx.signal } : {}) });
        tables.push(tableJson({ table, ...run }, local.windowDays));
      }
      print({ service: name, transport: { skipped: result.skipped, aborted: result.aborted, ms: result.ms, ...(result.walCompression ? { walCompression: result.walCompression } : {}) }, tables });
      return 0;
    }
    if (result.skipped) {
      writeLine(ctx.stdout, `${name}: skipped: another pruner holds the transport prune lock on this database`);
    } else {
      writeLine(ctx.stdout, `${name}: prune cycle in ${result.ms} ms (outbox window ${retention.outboxDays} d, inbox window ${retention.inboxDays} d)`);
      for (const t of result.tables) writeLine(ctx.stdout, `  ${t.table.padEnd(width)}  ${describe(name, t)}`);
    }
    for (const local of locals) {
      if (ctx.signal?.aborted) break;
      const table = local.definition.name;
      const run = await runLocalSweep(local.definition, { databaseUrl: settings.databaseUrl, windowDays: local.windowDays, applicationName: `${service}:${table}-sweep`, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      writeLine(ctx.stdout, `  ${table.padEnd(width)}  ${describe(name, { table, ...run })} (window ${local.windowDays} d)`);
    }
    return 0;
  },
};

function latchJson(latch: PruneLatch): { latchedAt: string; deleted: number; cap: number } {
  return { latchedAt: latch.latchedAt.toISOString(), deleted: latch.deleted, cap: latch.cap };
}

/** One table of a run for `--json`: status, rows and batches, its window and its latch. */
function tableJson(t: { readonly table: string; readonly status: TablePruneStatus | LocalSweepStatus; readonly deleted: number; readonly batches: number; readonly latch?: PruneLatch | undefined }, windowDays: number): Record<string, unknown> {
  return { table: t.table, windowDays, status: t.status, deleted: t.deleted, batches: t.batches, latch: t.latch ? latchJson(t.latch) : null };
}

function orList(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

function describe(service: string, t: { readonly table: string; readonly status: TablePruneStatus | LocalSweepStatus; readonly deleted: number; readonly batches: number; readonly latch?: PruneLatch | undefined }): string {
  switch (t.status) {
    case 'pruned':
      return `pruned ${t.deleted} rows in ${t.batches} batches`;
    case 'disabled':
      return 'disabled (window 0)';
    case 'latched':
      return `LATCHED since ${t.latch?.latchedAt.toISOString()} (deleted ${t.latch?.deleted} rows when it hit the cap); nothing deleted; after checking (docs/runbooks/prune-cap-latched.md): pnpm xtask prune ${service} --resume ${t.table}`;
    case 'capped':
      return `hit the cap after ${t.deleted} rows and LATCHED; see docs/runbooks/prune-cap-latched.md`;
    case 'aborted':
      return `aborted after ${t.deleted} rows`;
    case 'not_reached':
      return 'not reached (aborted)';
    case 'skipped':
      return 'skipped: another sweeper holds its lock on this database';
  }
}
