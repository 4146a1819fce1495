import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The metrics of @craig/mq, registered once per registry. */
export interface MqMetrics {
  /** `event_rows_pruned_total{table}`: rows the sweeps deleted (transport and service-local, e.g. `subsidy_reconcile_queue`). */
  readonly rowsPruned: Counter<'table'>;
  /** `event_prune_cycle_seconds`: wall time of each prune cycle that held the lock. */
  readonly pruneCycleSeconds: Histogram;
  /** `event_prune_cap_latched{table}`: 1 while a table's sweep is latched after hitting the cap. */
  readonly pruneCapLatched: Gauge<'table'>;
  /** `event_prune_cycles_total{status}`: transport prune cycles of this process: completed, skipped (another pruner holds the lock), aborted, failed. */
  readonly pruneCycles: Counter<'status'>;
  /** `event_prune_last_success_timestamp_seconds`: when this process last completed a transport prune cycle (its start until the first). */
  readonly pruneLastSuccess: Gauge;
  /** `event_prune_interval_seconds`: the configured time between prune cycles (EVENT_PRUNE_EVERY_TICKS × the tick), for "not run for two cadences". */
  readonly pruneInterval: Gauge;
  /** `event_outbox_pending`: rows waiting to be published (not parked). */
  readonly outboxPending: Gauge;
  /** `event_outbox_parked`: rows parked (never retried automatically, never pruned). */
  readonly outboxParked: Gauge;
  /** `event_dead_letters`: dead letters waiting in the transport (refreshed with the outbox gauges). */
  readonly deadLetters: Gauge;
  /** `event_outbox_published_total`: rows stamped published after a broker confirm. */
  readonly outboxPublished: Counter;
  /** `event_outbox_publish_failures_total{kind}`: per-row failures (rejected, unavailable, too_large, malformed, replay_past_horizon). */
  readonly outboxPublishFailures: Counter<'kind'>;
}

/**
 * `create` memoized per registry: a metric registers once on a registry, however many workers,
 * consumers or runners of one process share it (prom-client refuses a second registration).
 */
export function perRegistry<T>(create: (registry: Registry) => T): (registry: Registry) => T {
  const made = new WeakMap<Registry, T>();
  return (registry) => {
    let value = made.get(registry);
    if (value === undefined) {
      value = create(registry);
      made.set(registry, value);
    }
    return value;
  };
}

const byRegistry = new WeakMap<Registry, MqMetrics>();

/** The package's metrics on `registry` (created on first use; the same objects after). */
export function mqMetrics(registry: Registry): MqMetrics {
  let metrics = byRegistry.get(registry);
  if (metrics) return metrics;
  const registers = [registry];
  metrics = {
    rowsPruned: new Counter({ name: 'event_rows_pruned_total', help: 'Rows deleted by the retention sweeps, by table: the transport sweep and the service-local terminal-state sweeps.', labelNames: ['table'], registers }),
    pruneCycleSeconds: new Histogram({
      name: 'event_prune_cycle_seconds',
      help: 'Duration of transport prune cycles that held the lock.',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    }),
    pruneCapLatched: new Gauge({ name: 'event_prune_cap_latched', help: '1 while the table\'s sweep is latched after hitting its per-cycle cap (resume: pnpm xtask prune <service> --resume <table>).', labelNames: ['table'], registers }),
    pruneCycles: new Counter({ name: 'event_prune_cycles_total', help: 'Transport prune cycles run by this process, by status (completed, skipped: another pruner holds the lock, aborted, failed).', labelNames: ['status'], registers }),
    pruneLastSuccess: new Gauge({ name: 'event_prune_last_success_timestamp_seconds', help: "Unix time this process last completed a transport prune cycle (the worker's start until its first); take the max over a service's replicas: only one of them holds the lock.", registers }),
    pruneInterval: new Gauge({ name: 'event_prune_interval_seconds', help: 'Configured seconds between transport prune cycles (EVENT_PRUNE_EVERY_TICKS times the tick).', registers }),
    outboxPending: new Gauge({ name: 'event_outbox_pending', help: 'Outbox rows waiting to be published (parked rows excluded).', registers }),
    outboxParked: new Gauge({ name: 'event_outbox_parked', help: 'Outbox rows parked: never retried automatically, never pruned.', registers }),
    deadLetters: new Gauge({ name: 'event_dead_letters', help: 'Dead letters waiting in the transport for the dead-letter consumer.', registers }),
    outboxPublished: new Counter({ name: 'event_outbox_published_total', help: 'Outbox rows stamped published after the transport confirmed them.', registers }),
    outboxPublishFailures: new Counter({ name: 'event_outbox_publish_failures_total', help: 'Outbox rows that failed a publish, by kind.', labelNames: ['kind'], registers }),
  };
  byRegistry.set(registry, metrics);
  return metrics;
}
