// What the live view and the status page show of each service, built from the stack's running
// services, and the cell texts both print. A service has one or more processes (replicas), so
// state and restarts are summed over them; its activity is one set of run totals.
import { count, type Activity } from './activity.ts';
import type { InvariantResult } from '../invariants-check.ts';
import type { ServiceStatus } from './supervisor.ts';
import type { Running } from './traffic.ts';

/** One process of a service. */
export interface ProcessRow {
  readonly status: ServiceStatus;
  readonly restarts: number;
  readonly port: number;
}

/** The latest thing that went wrong, `atSeconds` into the run (undefined: not known). */
export interface LastError {
  readonly atSeconds: number | undefined;
  readonly message: string;
}

/** The latest `xtask invariants` verdict of a service, or why it could not be computed. */
export type InvariantVerdict =
  | { readonly atSeconds: number; readonly results: readonly InvariantResult[] }
  | { readonly atSeconds: number; readonly error: string };

export interface ServiceRow {
  readonly name: string;
  /** Why the service is not running at all; undefined when it runs. */
  readonly absent?: 'not built yet' | 'not selected' | undefined;
  readonly processes: readonly ProcessRow[];
  readonly activity: Activity | undefined;
  /** Row counts of the service's demo tables (undefined where the count failed). */
  readonly counts: ReadonlyMap<string, number | undefined>;
  readonly lastError: LastError | undefined;
  readonly invariants: InvariantVerdict | undefined;
}

/**
 * The rows of the stack: running services first, then the ones not built or not selected.
 * `startedAt` is `performance.now()` when the stack started (the crash and tick times are turned
 * into seconds of the run).
 */
export function rowsOf(
  running: readonly Running[],
  absent: { readonly notBuilt: readonly string[]; readonly skipped: readonly string[] },
  startedAt: number,
  invariants: (service: string) => InvariantVerdict | undefined,
): ServiceRow[] {
  const now = { perf: performance.now(), wall: Date.now() };
  const seconds = (perf: number) => (perf - startedAt) / 1000;
  return [
    ...running.map((r): ServiceRow => {
      const processes = r.supervisor.replicas.map((s) => ({ status: s.status, restarts: s.restarts, port: s.options.port, crash: s.crashes.at(-1) }));
      const errors: LastError[] = [];
      for (const p of processes) if (p.crash) errors.push({ atSeconds: seconds(now.perf - (now.wall - p.crash.at.getTime())), message: p.crash.reason });
      if (r.lastError) errors.push({ atSeconds: seconds(r.lastError.at), message: `demo tick failed: ${r.lastError.message}` });
      if (r.seedFailed !== undefined) errors.push({ atSeconds: undefined, message: `seeding aged history failed: ${r.seedFailed}` });
      errors.sort((a, b) => (b.atSeconds ?? -1) - (a.atSeconds ?? -1));
      return {
        name: r.service.name,
        processes: processes.map(({ status, restarts, port }) => ({ status, restarts, port })),
        activity: r.supervisor.activity(),
        counts: r.counts,
        lastError: errors[0],
        invariants: invariants(r.service.name),
      };
    }),
    ...absent.notBuilt.map((name) => absentRow(name, 'not built yet')),
    ...absent.skipped.map((name) => absentRow(name, 'not selected')),
  ];
}

function absentRow(name: string, why: 'not built yet' | 'not selected'): ServiceRow {
  return { name, absent: why, processes: [], activity: undefined, counts: new Map(), lastError: undefined, invariants: undefined };
}

export const DASH = '-';

/** "up", "restarting", or over several processes "2/2 up", "1/2 up, 1 restarting". */
export function stateText(row: ServiceRow): string {
  if (row.absent) return row.absent;
  const n = row.processes.length;
  if (n === 0) return 'no process';
  const by = new Map<ServiceStatus, number>();
  for (const p of row.processes) by.set(p.status, (by.get(p.status) ?? 0) + 1);
  if (n === 1) return row.processes[0]!.status;
  if (by.size === 1) return `${n}/${n} ${row.processes[0]!.status}`;
  const up = by.get('up') ?? 0;
  by.delete('up');
  return [`${up}/${n} up`, ...[...by].map(([status, k]) => `${k} ${status}`)].join(', ');
}

/** Whether every process of a running service is up. */
export function allUp(row: ServiceRow): boolean {
  return !row.absent && row.processes.length > 0 && row.processes.every((p) => p.status === 'up');
}

export function restartsOf(row: ServiceRow): number {
  return row.processes.reduce((s, p) => s + p.restarts, 0);
}

const sum = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((s, n) => s + n, 0);

/** [pending, parked], or undefined before the first scrape. */
export function outboxParts(a: Activity | undefined): [string, string] | undefined {
  if (!a || (a.pending === undefined && a.parked === undefined)) return undefined;
  return [a.pending === undefined ? '?' : count(a.pending), a.parked === undefined ? '?' : count(a.parked)];
}

/** Rows the transport sweep deleted: [outbox, inbox], plus the service-local sweeps' tables. */
export function prunedParts(a: Activity | undefined): { parts: [string, string]; local: number } | undefined {
  if (!a || a.pruned.size === 0) return undefined;
  const local = [...a.pruned].filter(([t]) => t !== 'event_outbox' && t !== 'event_inbox').reduce((s, [, n]) => s + n, 0);
  return { parts: [count(a.pruned.get('event_outbox') ?? 0), count(a.pruned.get('event_inbox') ?? 0)], local };
}

/** [rows archived, batches archived], and batches that failed (any outcome but `archived`). */
export function archivedParts(a: Activity | undefined): { parts: [string, string]; failed: number } | undefined {
  if (!a || (a.archivedRows.size === 0 && a.archiveBatches.size === 0)) return undefined;
  const failed = [...a.archiveBatches].filter(([o]) => o !== 'archived').reduce((s, [, n]) => s + n, 0);
  return { parts: [count(sum(a.archivedRows)), count(a.archiveBatches.get('archived') ?? 0)], failed };
}

/** [jobs finished, steps, source rows deleted]. */
export function cleanupParts(a: Activity | undefined): [string, string, string] | undefined {
  if (!a || (a.cleanupSteps === 0 && a.cleanupJobs.size === 0)) return undefined;
  return [count(sum(a.cleanupJobs)), count(a.cleanupSteps), count(a.cleanupDeleted)];
}

/** "ok", "2 red", "not yet" (not checked yet), or "check failed". */
export function invariantsText(v: InvariantVerdict | undefined): string {
  if (!v) return 'not yet';
  if ('error' in v) return 'check failed';
  const red = v.results.filter((r) => !r.ok).length;
  return red === 0 ? 'ok' : `${red} red`;
}

/** `[   12s] message`, the way events are stamped. */
export function stamp(elapsedSeconds: number): string {
  return `[${String(Math.floor(elapsedSeconds)).padStart(5)}s]`;
}

export function lastErrorText(e: LastError | undefined): string {
  if (!e) return DASH;
  return e.atSeconds === undefined ? e.message : `${Math.floor(e.atSeconds)}s: ${e.message}`;
}
