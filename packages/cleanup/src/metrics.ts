import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The runner's metrics, registered on the caller's registry (never the global default). */
export interface CleanupMetrics {
  readonly steps: Counter<'kind' | 'phase' | 'outcome'>;
  readonly rows: Counter<'outcome'>;
  readonly stepSeconds: Histogram<'phase'>;
  readonly jobsFinished: Counter<'kind' | 'state'>;
  readonly historyRows: Counter<'table'>;
  /** Jobs not finished, by state (collecting, deleting), as the runner's last check saw them. */
  readonly activeJobs: Gauge<'state'>;
  /** The oldest last step among deleting jobs (`updated_at`, Unix seconds): a stuck job keeps it still while time() moves on. */
  readonly oldestDeletingStep: Gauge;
}

const cache = new WeakMap<Registry, CleanupMetrics>();

/** One set of metrics per registry, however many runners share it. */
export function cleanupMetrics(registry: Registry): CleanupMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const metrics: CleanupMetrics = {
    steps: new Counter({ name: 'cleanup_steps_total', help: 'Cleanup steps run, by job kind, phase and outcome (ok, replayed, busy, failed).', labelNames: ['kind', 'phase', 'outcome'], registers }),
    rows: new Counter({ name: 'cleanup_rows_total', help: 'Source rows handled by cleanup steps, by outcome (deleted, moved, already_absent, retained, kept).', labelNames: ['outcome'], registers }),
    stepSeconds: new Histogram({
      name: 'cleanup_step_seconds',
      help: 'Duration of one cleanup step transaction, commit included.',
      labelNames: ['phase'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    jobsFinished: new Counter({ name: 'cleanup_jobs_finished_total', help: 'Cleanup jobs that completed or were cancelled.', labelNames: ['kind', 'state'], registers }),
    historyRows: new Counter({ name: 'cleanup_history_rows_pruned_total', help: 'Rows of finished jobs removed by the history sweep, by table.', labelNames: ['table'], registers }),
    activeJobs: new Gauge({ name: 'cleanup_jobs_active', help: "Cleanup jobs not finished, by state (collecting, deleting), at the runner's last check (about every second).", labelNames: ['state'], registers }),
    oldestDeletingStep: new Gauge({
      name: 'cleanup_deleting_job_last_step_timestamp_seconds',
      help: 'Unix time of the oldest last step among deleting cleanup jobs (0 when none): time() minus this is how long the most stalled job has not advanced.',
      registers,
    }),
  };
  cache.set(registry, metrics);
  return metrics;
}
