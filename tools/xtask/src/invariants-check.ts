// What `pnpm xtask invariants <service>` computes, as a function: the command prints it, and the
// devstack's status page shows it for every running service. Report-only: nothing is changed.
import { cleanupRetentionSpecs } from '@craig/cleanup';
import type { Sql } from '@craig/db';
import { outboxBacklog, readDedupHorizonObservations, readPruneLatches, retentionOverrun, serviceVariable, transportRetentionSpecs, type DedupHorizonObservation, type RetentionSpec } from '@craig/mq';
import { archiveRetentionSpecs } from '@craig/retention';
import type { ServiceEntry, ToolSettings } from './services.ts';

/** One line of the report: an invariant and whether it holds. */
export interface InvariantResult {
  readonly name: string;
  readonly ok: boolean;
  /** Rows that break it (overdue rows, parked rows), 0 when it holds. */
  readonly rows: number;
  readonly detail: string;
}

/** The retention specs checked for a service: transport, archive, cleanup, and its own sweeps. */
export function invariantSpecs(entry: ServiceEntry, settings: ToolSettings): RetentionSpec[] {
  const specs: RetentionSpec[] = [...transportRetentionSpecs(settings.retention)];
  if (settings.archive && entry.archive) specs.push(...archiveRetentionSpecs(entry.archive.specs, settings.archive.hotWindowDays));
  if (settings.cleanup) specs.push(...cleanupRetentionSpecs(settings.cleanup.jobRetentionDays));
  // The service's own sweeps (financial: settled subsidy_reconcile_queue rows).
  if (entry.invariants) specs.push(...entry.invariants(settings));
  return specs;
}

/**
 * Every invariant of the service `name` on its database `sql`, with the database's own clock:
 * each sweep keeping up, no sweep latched, no outbox row parked, no producer replaying past the
 * service's dedup records.
 */
export async function checkInvariants(sql: Sql, name: string, entry: ServiceEntry, settings: ToolSettings): Promise<InvariantResult[]> {
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
  results.push(dedupHorizon(name, await readDedupHorizonObservations(sql)));
  return results;
}

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

