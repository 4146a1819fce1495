// What `pnpm xtask invariants <service>` computes, as a function: the command prints it, and the
// devstack's status page shows it for every running service. Report-only: nothing is changed.
import { cleanupRetentionSpecs } from '@craig/cleanup';
import type { Sql } from '@craig/db';
import { outboxBacklog, readPruneLatches, retentionOverrun, transportRetentionSpecs, type RetentionSpec } from '@craig/mq';
import { archiveRetentionSpecs } from '@craig/retention';
import type { ServiceSettings } from '@craig/settings';
import type { ServiceEntry } from './services.ts';

/** One line of the report: an invariant and whether it holds. */
export interface InvariantResult {
  readonly name: string;
  readonly ok: boolean;
  /** Rows that break it (overdue rows, parked rows), 0 when it holds. */
  readonly rows: number;
  readonly detail: string;
}

/** The retention specs checked for a service: transport, archive, cleanup, and its own sweeps. */
export function invariantSpecs(entry: ServiceEntry, settings: ServiceSettings): RetentionSpec[] {
  const specs: RetentionSpec[] = [...transportRetentionSpecs(settings.retention)];
  if (settings.archive && entry.archive) specs.push(...archiveRetentionSpecs(entry.archive.specs, settings.archive.hotWindowDays));
  if (settings.cleanup) specs.push(...cleanupRetentionSpecs(settings.cleanup.jobRetentionDays));
  // The service's own sweeps (financial: settled subsidy_reconcile_queue rows).
  if (entry.invariants) specs.push(...entry.invariants(settings));
  return specs;
}

/**
 * Every invariant of the service `name` on its database `sql`, with the database's own clock:
 * each sweep keeping up, no sweep latched, no outbox row parked.
 */
export async function checkInvariants(sql: Sql, name: string, entry: ServiceEntry, settings: ServiceSettings): Promise<InvariantResult[]> {
  const results: InvariantResult[] = [];
  for (const spec of invariantSpecs(entry, settings)) {
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
  return results;
}
