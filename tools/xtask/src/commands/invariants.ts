import { createClient } from '@craig/db';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { printTable } from '../bench/measure.ts';
import { checkInvariants, type InvariantResult } from '../invariants-check.ts';
import { knownServiceNames, loadToolSettings, serviceEntry } from '../services.ts';

export type { InvariantResult } from '../invariants-check.ts';

export const invariantsCommand: Command = {
  name: 'invariants',
  summary: "check a service's retention invariants (report-only; exit 1 when one is red)",
  usage: `pnpm xtask invariants <service> [--json]

Reads the service's database (CRAIG_<SERVICE>__DATABASE_URL; the windows from the same
settings; no admin token, HTTP, transport or object-store settings needed) and checks, with
the database's own clock, that every sweep is keeping up. Nothing is changed.

  event_outbox_retention_overrun   published outbox rows older than the outbox window + 48 h
  event_inbox_retention_overrun    inbox rows older than the inbox window + 48 h
  prune_latch                      no sweep (transport or service-local) is latched at its cap
  event_outbox_parked              no outbox row is parked (never delivered; redrive it)
  dedup_horizon                    no producer this service consumes from may replay past its
                                   dedup records: the last delivery its consumers saw from
                                   each producer carried an outbox window < this service's
                                   inbox window (recorded by the consumers, at most hourly;
                                   pnpm xtask fleet check compares the settings)
  <table>_archive_overrun          archivable rows older than the hot window + 48 h
                                   (archiving services with registered specs)
  cleanup_history_retention_overrun
                                   finished cleanup jobs older than their retention + 48 h
                                   (services with cleanup jobs)
  subsidy_reconcile_queue_retention_overrun
                                   settled reconcile rows older than
                                   RECONCILE_SETTLED_RETENTION_DAYS + 48 h (financial)

A window of 0 (sweep disabled) holds trivially. Exit 0 when all hold, 1 when any is red.
--json prints the results as JSON.`,
  async run(ctx) {
    const { positionals, flags } = parseArgs(ctx.argv, { flags: ['json'] });
    const [name, ...extra] = positionals;
    if (!name || extra.length > 0) throw new UsageError('expected exactly one service name');
    const entry = serviceEntry(name);
    if (!entry) throw new UsageError(`unknown service "${name}" (known: ${knownServiceNames().join(', ')})`);
    const settings = loadToolSettings(entry, ctx.env);
    const sql = createClient(settings.databaseUrl, { service: `${name}:xtask`, max: 1 });
    let results: InvariantResult[];
    try {
      results = await checkInvariants(sql, name, entry, settings);
    } finally {
      await sql.end({ timeout: 5 });
    }

    if (flags.has('json')) writeLine(ctx.stdout, JSON.stringify({ service: name, ok: results.every((r) => r.ok), invariants: results }, null, 2));
    else {
      printTable(ctx.stdout, ['invariant', 'state', 'detail'], results.map((r) => [r.name, r.ok ? 'ok' : 'RED', r.detail]));
      const red = results.filter((r) => !r.ok).length;
      writeLine(ctx.stdout, red === 0 ? `${name}: every invariant holds` : `${name}: ${red} invariant(s) red`);
    }
    return results.every((r) => r.ok) ? 0 : 1;
  },
};
