// The end of a devstack run: what each service did, and whether a timed run (--for) passed.
import { count, type Activity } from './activity.ts';
import type { Crash, ServiceStatus } from './supervisor.ts';

export interface ServiceOutcome {
  readonly name: string;
  /** Status just before the stack stopped it. */
  readonly statusAtEnd: ServiceStatus;
  readonly crashes: readonly Crash[];
  readonly activity: Activity;
  /** Aged history was seeded in this run (so a prune cycle had aged rows to delete). */
  readonly seededThisRun: boolean;
  readonly seedNote: string | undefined;
  /** Seeding its aged history failed, with this message. */
  readonly seedFailed?: string | undefined;
  /** The service archives (its profile has archive settings). */
  readonly archives?: boolean;
}

export interface Verdict {
  readonly ok: boolean;
  readonly reasons: readonly string[];
  readonly lines: readonly string[];
}

/**
 * Per service: stayed up or crashed, rows pruned per table, outbox published, archive, cleanup
 * jobs. A timed run passes when every service stayed up, its aged history was seeded without an
 * error, and every service seeded in this run saw a prune cycle delete aged rows (and, when it
 * archives, an archive cycle archive some).
 */
export function summarize(outcomes: readonly ServiceOutcome[], elapsedSeconds: number, timed: boolean): Verdict {
  const lines = [`devstack summary after ${Math.round(elapsedSeconds)} s:`];
  const reasons: string[] = [];
  for (const o of outcomes) {
    const a = o.activity;
    const up = o.crashes.length === 0 && o.statusAtEnd === 'up';
    const pruned = [...a.pruned.values()].reduce((s, n) => s + n, 0);
    lines.push(`  ${o.name}: ${up ? 'stayed up' : `${o.statusAtEnd}, crashed ${o.crashes.length} time${o.crashes.length === 1 ? '' : 's'}${o.crashes[0] ? ` (first: ${o.crashes[0].reason})` : ''}`}`);
    lines.push(`  ${o.name}: pruned ${count(pruned)} rows${a.pruned.size ? ` (${[...a.pruned].map(([t, n]) => `${t} ${count(n)}`).join(', ')})` : ''}; published ${count(a.published)} outbox rows${a.latched.length ? `; LATCHED: ${a.latched.join(', ')}` : ''}`);
    if (a.archivedRows.size) lines.push(`  ${o.name}: archived ${[...a.archivedRows].map(([t, n]) => `${t} ${count(n)}`).join(', ')} in ${count(a.archiveBatches.get('archived') ?? 0)} batches`);
    if (a.cleanupSteps > 0 || a.cleanupJobs.size > 0) {
      const jobs = [...a.cleanupJobs].map(([k, n]) => `${count(n)} ${k}`).join(', ') || 'none finished';
      lines.push(`  ${o.name}: cleanup jobs ${jobs}; ${count(a.cleanupDeleted)} rows deleted in ${count(a.cleanupSteps)} steps`);
    }
    if (o.seedNote) lines.push(`  ${o.name}: ${o.seedNote}`);
    if (!up) reasons.push(`${o.name} did not stay up (${o.crashes.map((c) => c.reason).join('; ') || o.statusAtEnd})`);
    if (o.seededThisRun && pruned === 0) reasons.push(`${o.name}: no prune cycle deleted aged rows`);
    if (o.seededThisRun && o.archives && a.archivedRows.size === 0) reasons.push(`${o.name}: no archive cycle archived aged rows`);
    if (o.seedFailed !== undefined) reasons.push(`${o.name}: seeding aged history failed (${o.seedFailed})`);
  }
  if (timed) lines.push(reasons.length === 0 ? 'result: ok' : `result: FAILED: ${reasons.join('; ')}`);
  return { ok: reasons.length === 0, reasons, lines };
}
