import type { ArchiveEngine, CycleReport } from './engine.ts';
import { perRegistry, runEvery } from '@craig/mq';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { ArchiveLeaseHeldError } from './errors.ts';

export interface ArchiveRunnerOptions {
  readonly engine: ArchiveEngine;
  /** Settings ARCHIVE_EVERY_MINUTES: minutes between the starts of two cycles. */
  readonly everyMinutes: number;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Wait before the first cycle; default 5 s (a booting fleet is busy enough). */
  readonly initialDelayMs?: number;
}

const cycleCounter = perRegistry((registry): Counter<'status' | 'trigger'> => new Counter({
  name: 'archive_cycles_total',
  help: 'Archive cycles started by this process, by status (completed, lease_held, aborted, failed) and trigger (timer, admin).',
  labelNames: ['status', 'trigger'],
  registers: [registry],
}));

/**
 * Runs the archive engine every ARCHIVE_EVERY_MINUTES, and once on demand (a service's admin
 * route). Every archiving service composes one. The engine's lease
 * (`pg_try_advisory_lock` on a dedicated session) is what keeps two archivers of one database
 * apart, across replicas and within this process alike: a cycle that finds it held does nothing.
 */
export class ArchiveRunner {
  private readonly logger: Logger;
  private readonly cycles: Counter<'status' | 'trigger'>;

  constructor(private readonly options: ArchiveRunnerOptions) {
    if (!Number.isInteger(options.everyMinutes) || options.everyMinutes < 1) throw new RangeError(`everyMinutes must be a whole number ≥ 1: ${options.everyMinutes}`);
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'archive-runner' });
    this.cycles = cycleCounter(options.registry);
  }

  /**
   * One cycle now (the admin route). Throws `ArchiveLeaseHeldError` when another archiver holds
   * the lease; a table that failed is reported in its `outcome`, not thrown.
   */
  async runNow(signal?: AbortSignal): Promise<CycleReport> {
    const report = await this.cycle('admin', signal);
    if (report.status === 'lease_held') throw new ArchiveLeaseHeldError(this.options.engine.service);
    return report;
  }

  /** The timer loop, until `signal` aborts (the cycle in flight is aborted between batches). */
  async run(signal: AbortSignal): Promise<void> {
    await runEvery(
      signal,
      { firstMs: this.options.initialDelayMs ?? 5_000, everyMs: this.options.everyMinutes * 60_000 },
      () => this.cycle('timer', signal),
      // Logged and retried at the next interval: the rows stay hot, nothing is lost.
      (error) => this.logger.error({ err: error }, 'archive cycle failed'),
    );
  }

  private async cycle(trigger: 'timer' | 'admin', signal: AbortSignal | undefined): Promise<CycleReport> {
    try {
      const report = await this.options.engine.runCycle(signal ? { signal } : {});
      this.cycles.inc({ status: report.status, trigger });
      return report;
    } catch (error) {
      this.cycles.inc({ status: 'failed', trigger });
      throw error;
    }
  }
}
