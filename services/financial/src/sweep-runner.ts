import { pruneJitter, PRUNE_EVERY_TICKS, POLL_INTERVAL_MS } from '@craig/mq';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { SweepLockHeldError } from './errors.ts';
import { sweepSettledReconcileRows, type SweepOptions, type SweepResult } from './reconcile-sweep.ts';

/** Hourly, like the transport sweep. */
export const SWEEP_EVERY_MS = PRUNE_EVERY_TICKS * POLL_INTERVAL_MS;

export interface SweepRunnerOptions extends Omit<SweepOptions, 'signal' | 'logger' | 'registry'> {
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Between the starts of two cycles; default hourly. */
  readonly everyMs?: number;
  /**
   * Before the first cycle; default a deterministic per-service phase within the hour (FNV-1a
   * of `<service>:reconcile-sweep`), so replicas share it (the lock picks one) and the sweep
   * does not start in step with the transport sweep.
   */
  readonly initialDelayMs?: number;
}

const counters = new WeakMap<Registry, Counter<'status' | 'trigger'>>();
function cycleCounter(registry: Registry): Counter<'status' | 'trigger'> {
  let counter = counters.get(registry);
  if (!counter) {
    counter = new Counter({
      name: 'financial_reconcile_sweep_cycles_total',
      help: 'Settled reconcile sweep cycles started by this process, by status (pruned, disabled, skipped, latched, capped, aborted, failed) and trigger (timer, admin).',
      labelNames: ['status', 'trigger'],
      registers: [registry],
    });
    counters.set(registry, counter);
  }
  return counter;
}

/** Runs the settled reconcile sweep on its timer, and once on demand (the admin route). */
export class SweepRunner {
  private readonly logger: Logger;
  private readonly cycles: Counter<'status' | 'trigger'>;

  constructor(private readonly options: SweepRunnerOptions) {
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'reconcile-sweep' });
    this.cycles = cycleCounter(options.registry);
  }

  /** One cycle now. Throws `SweepLockHeldError` when another sweeper holds the lock. */
  async runNow(signal?: AbortSignal): Promise<SweepResult> {
    const result = await this.cycle('admin', signal);
    if (result.status === 'skipped') throw new SweepLockHeldError();
    return result;
  }

  /** The timer loop until `signal` aborts; the cycle in flight stops between batches. */
  async run(signal: AbortSignal): Promise<void> {
    const every = this.options.everyMs ?? SWEEP_EVERY_MS;
    const first = this.options.initialDelayMs ?? pruneJitter(`${this.options.service}:reconcile-sweep`, PRUNE_EVERY_TICKS) * POLL_INTERVAL_MS;
    this.logger.info({ retentionDays: this.options.retentionDays, everyMs: every, firstInMs: first }, 'settled reconcile sweep started');
    await sleep(first, signal);
    while (!signal.aborted) {
      const started = Date.now();
      try {
        await this.cycle('timer', signal);
      } catch (error) {
        // Logged by the sweep; the next cycle tries again. Nothing is deleted by a failed batch.
        this.logger.debug({ err: error }, 'settled reconcile sweep cycle failed');
      }
      await sleep(Math.max(0, every - (Date.now() - started)), signal);
    }
  }

  private async cycle(trigger: 'timer' | 'admin', signal: AbortSignal | undefined): Promise<SweepResult> {
    try {
      const result = await sweepSettledReconcileRows({ ...this.options, logger: this.logger, ...(signal ? { signal } : {}) });
      this.cycles.inc({ status: result.status, trigger });
      return result;
    } catch (error) {
      this.cycles.inc({ status: 'failed', trigger });
      throw error;
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
