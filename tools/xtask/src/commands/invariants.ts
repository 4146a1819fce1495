import { cleanupRetentionSpecs } from '@craig/cleanup';
import { createClient } from '@craig/db';
import { outboxBacklog, readDedupHorizonObservations, readPruneLatches, retentionOverrun, serviceVariable, transportRetentionSpecs, type DedupHorizonObservation, type RetentionSpec } from '@craig/mq';
import { archiveRetentionSpecs } from '@craig/retention';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { printTable } from '../bench/measure.ts';
import { knownServiceNames, loadToolSettings, serviceEntry } from '../services.ts';

/** One line of the report: an invariant and whether it holds. */
export interface InvariantResult {
  readonly name: string;
  readonly ok: boolean;
  /** Rows that break it (overdue rows, parked rows), 0 when it holds. */
  readonly rows: number;
  readonly detail: string;
}

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
    const specs: RetentionSpec[] = [...transportRetentionSpecs(settings.retention)];
    if (settings.archive && entry.archive) specs.push(...archiveRetentionSpecs(entry.archive.specs, settings.archive.hotWindowDays));
    if (settings.cleanup) specs.push(...cleanupRetentionSpecs(settings.cleanup.jobRetentionDays));
    // The service's own sweeps (financial: settled subsidy_reconcile_queue rows).
    if (entry.invariants) specs.push(...entry.invariants(settings));

    const sql = createClient(settings.databaseUrl, { service: `${name}:xtask`, max: 1 });
    const results: InvariantResult[] = [];
    try {
      for (const spec of specs) {
        const o = await retentionOverrun(sql, spec);
        results.push({
          name: o.name,
          ok: o.ok,
          rows: o.overdueRows,
          detail: spec.windowDays === 0 ? 'sweep disabled (window 0)' : o.ok ? `none older than ${spec.windowDays} d + grace` : `${o.overdueRows} overdue, oldest ${o.oldest?.toISOString() ?? '?'}`,
        });
      }
      const latches = [...(await readPruneLatches(sql)).values()];
      results.push({
        name: 'prune_latch',
        ok: latches.length === 0,
        rows: 0,
        detail:
          latches.length === 0
            ? 'no sweep latched'
            : latches.map((l) => `${l.target} latched since ${l.latchedAt.toISOString()}: pnpm xtask prune ${name} --resume ${l.target}`).join('; '),
      });
      const { parked } = await outboxBacklog(sql);
      results.push({
        name: 'event_outbox_parked',
        ok: parked === 0,
        rows: parked,
        detail: parked === 0 ? 'nothing parked' : `${parked} parked rows never delivered: POST /v1/admin/events/redrive`,
      });
      results.push(dedupHorizon(name, await readDedupHorizonObservations(sql)));
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

/**
 * Red while the last delivery any of the service's consumers saw from some producer said that
 * producer may replay further back than this service keeps its dedup records. A retired
 * producer's row stays red until deleted from `dedup_horizon_observations` (it could still replay).
 */
function dedupHorizon(service: string, observations: readonly DedupHorizonObservation[]): InvariantResult {
  const violated = observations.filter((o) => o.violated);
  if (violated.length === 0) {
    return {
      name: 'dedup_horizon',
      ok: true,
      rows: 0,
      detail: observations.length === 0 ? 'no producer window seen yet (no delivery carried one)' : `every producer seen keeps within the inbox window (${[...new Set(observations.map((o) => o.producer))].join(', ')})`,
    };
  }
  return {
    name: 'dedup_horizon',
    ok: false,
    rows: violated.length,
    detail: violated
      .map(
        (o) =>
          `${o.consumer} saw ${o.producer} with ${serviceVariable(o.producer, 'EVENT_OUTBOX_RETENTION_DAYS')}=${o.producerOutboxDays} against ${serviceVariable(service, 'EVENT_INBOX_RETENTION_DAYS')}=${o.consumerInboxDays} (last ${o.observedAt.toISOString()})`,
      )
      .join('; ') + ': a replay can run side effects twice; move the windows fleet-wide (pnpm xtask fleet check)',
  };
}
