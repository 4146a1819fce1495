// What a service's sweeps, archive and cleanup have done during this devstack run, from its
// /metrics. Counters restart at 0 when a service restarts: a counter that went down is a new
// process, and its whole value is new work, so totals survive restarts.
import { seriesKey, type Sample } from './metrics-parse.ts';

/** Totals over the run (all restarts) and the latest gauges of one service. */
export interface Activity {
  /** Rows deleted by the transport sweep, per table (`event_rows_pruned_total`). */
  readonly pruned: ReadonlyMap<string, number>;
  /** Outbox rows published (`event_outbox_published_total`). */
  readonly published: number;
  /** Latest `event_outbox_pending` / `event_outbox_parked`; undefined before the first refresh. */
  readonly pending: number | undefined;
  readonly parked: number | undefined;
  /** Tables whose sweep is latched after hitting its per-cycle cap (`event_prune_cap_latched`). */
  readonly latched: readonly string[];
  /** Rows archived then pruned, per table, and archive batches by outcome. */
  readonly archivedRows: ReadonlyMap<string, number>;
  readonly archiveBatches: ReadonlyMap<string, number>;
  /** Cleanup jobs finished by `<kind> <state>`, steps run and source rows deleted. */
  readonly cleanupJobs: ReadonlyMap<string, number>;
  readonly cleanupSteps: number;
  readonly cleanupDeleted: number;
}

/** Sum of the run's totals of one counter, optionally per label value. */
interface Totals {
  total(name: string, where?: Readonly<Record<string, string>>): number;
  per(name: string, label: string, where?: Readonly<Record<string, string>>): Map<string, number>;
}

/**
 * Feed it each scrape of one service; it keeps run totals and returns one line per thing that
 * happened since the previous scrape ("pruned 9,000 event_outbox rows").
 */
export class ActivityTracker {
  private readonly last = new Map<string, number>();
  private readonly totals = new Map<string, { sample: Sample; total: number }>();
  private gauges: readonly Sample[] = [];

  /** Record one scrape; returns what happened since the last one, in words. */
  update(samples: readonly Sample[]): string[] {
    const deltas = new Map<string, { sample: Sample; delta: number }>();
    const previousLatched = new Set(this.activity().latched);
    for (const s of samples) {
      if (!isCounter(s.name)) continue;
      const key = seriesKey(s);
      const before = this.last.get(key) ?? 0;
      const delta = s.value >= before ? s.value - before : s.value;
      this.last.set(key, s.value);
      const entry = this.totals.get(key) ?? { sample: s, total: 0 };
      entry.total += delta;
      this.totals.set(key, entry);
      if (delta > 0) deltas.set(key, { sample: s, delta });
    }
    this.gauges = samples.filter((s) => GAUGES.has(s.name));
    return describe(view(deltas), previousLatched, this.activity().latched);
  }

  /** The run's totals so far. */
  activity(): Activity {
    const t = view(new Map([...this.totals].map(([k, v]) => [k, { sample: v.sample, delta: v.total }])));
    const gauge = (name: string) => this.gauges.find((g) => g.name === name)?.value;
    return {
      pruned: t.per('event_rows_pruned_total', 'table'),
      published: t.total('event_outbox_published_total'),
      pending: gauge('event_outbox_pending'),
      parked: gauge('event_outbox_parked'),
      latched: this.gauges.filter((g) => g.name === 'event_prune_cap_latched' && g.value >= 1).map((g) => g.labels.table ?? '?'),
      archivedRows: t.per('archive_rows_total', 'table'),
      archiveBatches: t.per('archive_batches_total', 'outcome'),
      cleanupJobs: jobKeys(t),
      cleanupSteps: t.total('cleanup_steps_total'),
      cleanupDeleted: t.total('cleanup_rows_total', { outcome: 'deleted' }),
    };
  }
}

const COUNTERS = new Set([
  'event_rows_pruned_total',
  'event_outbox_published_total',
  'archive_rows_total',
  'archive_batches_total',
  'cleanup_steps_total',
  'cleanup_rows_total',
  'cleanup_jobs_finished_total',
  'cleanup_history_rows_pruned_total',
]);
const GAUGES = new Set(['event_outbox_pending', 'event_outbox_parked', 'event_prune_cap_latched']);

const isCounter = (name: string) => COUNTERS.has(name);

function view(values: ReadonlyMap<string, { sample: Sample; delta: number }>): Totals {
  const matching = (name: string, where: Readonly<Record<string, string>>) =>
    [...values.values()].filter(({ sample }) => sample.name === name && Object.entries(where).every(([k, v]) => sample.labels[k] === v));
  return {
    total: (name, where = {}) => matching(name, where).reduce((sum, { delta }) => sum + delta, 0),
    per: (name, label, where = {}) => {
      const out = new Map<string, number>();
      for (const { sample, delta } of matching(name, where)) out.set(sample.labels[label] ?? '', (out.get(sample.labels[label] ?? '') ?? 0) + delta);
      return out;
    },
  };
}

function jobKeys(t: Totals): Map<string, number> {
  const out = new Map<string, number>();
  for (const [kind, n] of t.per('cleanup_jobs_finished_total', 'kind', { state: 'completed' })) out.set(`${kind} completed`, n);
  for (const [kind, n] of t.per('cleanup_jobs_finished_total', 'kind', { state: 'cancelled' })) out.set(`${kind} cancelled`, n);
  return out;
}

/** Thousands separators, the way the live view prints every count. */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function describe(d: Totals, latchedBefore: ReadonlySet<string>, latchedNow: readonly string[]): string[] {
  const lines: string[] = [];
  const published = d.total('event_outbox_published_total');
  if (published > 0) lines.push(`published ${count(published)} outbox rows`);
  for (const [table, n] of d.per('event_rows_pruned_total', 'table')) lines.push(`pruned ${count(n)} ${table} rows`);
  for (const table of latchedNow) if (!latchedBefore.has(table)) lines.push(`${table} sweep LATCHED at its per-cycle cap (see docs/runbooks/prune-cap-latched.md)`);
  for (const [table, n] of d.per('archive_rows_total', 'table')) {
    const batches = d.per('archive_batches_total', 'table', { outcome: 'archived' }).get(table) ?? 0;
    lines.push(`archived ${count(n)} ${table} rows in ${count(batches)} batch${batches === 1 ? '' : 'es'}`);
  }
  for (const [outcome, n] of d.per('archive_batches_total', 'outcome')) if (outcome !== 'archived') lines.push(`${count(n)} archive batch${n === 1 ? '' : 'es'} ${outcome}`);
  const deleted = d.total('cleanup_rows_total', { outcome: 'deleted' });
  const steps = d.total('cleanup_steps_total');
  if (deleted > 0) lines.push(`cleanup deleted ${count(deleted)} rows in ${count(steps)} step${steps === 1 ? '' : 's'}`);
  for (const [key, n] of jobKeys(d)) lines.push(`cleanup: ${count(n)} ${key.replace(' ', ' job' + (n === 1 ? ' ' : 's '))}`);
  for (const [table, n] of d.per('cleanup_history_rows_pruned_total', 'table')) lines.push(`cleanup history: pruned ${count(n)} ${table} rows`);
  return lines;
}

/**
 * One service's activity from several processes (`--replicas`): counters summed, gauges (which
 * every replica reads from the same database) the highest, latched tables all of them.
 */
export function mergeActivities(list: readonly Activity[]): Activity {
  if (list.length === 1) return list[0]!;
  const sum = (pick: (a: Activity) => ReadonlyMap<string, number>) => {
    const out = new Map<string, number>();
    for (const a of list) for (const [k, n] of pick(a)) out.set(k, (out.get(k) ?? 0) + n);
    return out;
  };
  const highest = (pick: (a: Activity) => number | undefined) => {
    const values = list.map(pick).filter((v): v is number => v !== undefined);
    return values.length ? Math.max(...values) : undefined;
  };
  return {
    pruned: sum((a) => a.pruned),
    published: list.reduce((n, a) => n + a.published, 0),
    pending: highest((a) => a.pending),
    parked: highest((a) => a.parked),
    latched: [...new Set(list.flatMap((a) => a.latched))],
    archivedRows: sum((a) => a.archivedRows),
    archiveBatches: sum((a) => a.archiveBatches),
    cleanupJobs: sum((a) => a.cleanupJobs),
    cleanupSteps: list.reduce((n, a) => n + a.cleanupSteps, 0),
    cleanupDeleted: list.reduce((n, a) => n + a.cleanupDeleted, 0),
  };
}
