import { LocalSweepRunner, POLL_INTERVAL_MS, PRUNE_EVERY_TICKS, type LocalSweepRunnerOptions } from '@craig/mq';
import { SweepLockHeldError } from './errors.ts';
import { RECONCILE_SWEEP, type SweepResult } from './reconcile-sweep.ts';

/** Hourly, like the transport sweep. */
export const SWEEP_EVERY_MS = PRUNE_EVERY_TICKS * POLL_INTERVAL_MS;

export interface SweepRunnerOptions extends Omit<LocalSweepRunnerOptions, 'windowDays' | 'applicationName'> {
  /** `application_name` prefix of the sweep's sessions. */
  readonly service: string;
  /** RECONCILE_SETTLED_RETENTION_DAYS; 0 disables the sweep. */
  readonly retentionDays: number;
}

/**
 * The settled reconcile sweep on its timer (hourly, a deterministic phase), and once on demand
 * (the admin route): @craig/mq's `LocalSweepRunner`, whose counter is
 * `local_sweep_cycles_total{sweep="subsidy_reconcile_queue",status,trigger}`.
 */
export class SweepRunner extends LocalSweepRunner {
  constructor(options: SweepRunnerOptions) {
    const { service, retentionDays, ...rest } = options;
    super(RECONCILE_SWEEP, { ...rest, windowDays: retentionDays, applicationName: `${service}:reconcile-sweep` });
  }

  /** One cycle now. Throws `SweepLockHeldError` when another sweeper holds the lock. */
  override async runNow(signal?: AbortSignal): Promise<SweepResult> {
    const result = await super.runNow(signal);
    if (result.status === 'skipped') throw new SweepLockHeldError();
    return result;
  }
}
