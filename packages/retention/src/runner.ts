import type { ArchiveEngine, CycleReport } from './engine.ts';
import { cadencePhase, perRegistry, runEvery } from '@craig/mq';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { ArchiveLeaseHeldError } from './errors.ts';

export interface ArchiveRunnerOptions {
  readonly engine: ArchiveEngine;
  /** Settings ARCHIVE_EVERY_MINUTES: minutes between the starts of two cycles. */
  readonly everyMinutes: number;
  readonly registry: Registry;
  readonly logger?: Logger;
  /**
   * Settings ARCHIVE_FIRST_CYCLE_DELAY_SECONDS (default {@link DEFAULT_FIRST_CYCLE_DELAY_SECONDS}):
   * the first timed cycle runs between this and twice this after start, at a phase derived
   * from the service name ({@link firstArchiveCycleMs}).
   */
  readonly firstCycleDelaySeconds?: number;
  /** Wait before the first cycle exactly, instead of the jittered delay (tests). */
  readonly initialDelayMs?: number;
}

/** ARCHIVE_FIRST_CYCLE_DELAY_SECONDS's default: the first cycle 5 to 10 minutes after start. */
export const DEFAULT_FIRST_CYCLE_DELAY_SECONDS = 300;

/**
 * When a service's first timed archive cycle runs: `delaySeconds` plus a phase in
 * [0, delaySeconds) from FNV-1a of `<service>:archive` (like the prune jitter: deterministic,
 * so a service's replicas align and the lease picks one, while the fleet's services spread
 * instead of all archiving the moment a deploy finishes). 0 means at once.
 */
export function firstArchiveCycleMs(service: string, delaySeconds: number): number {
  if (!Number.isInteger(delaySeconds) || delaySeconds < 0) throw new RangeError(`delaySeconds must be a whole number ≥ 0: ${delaySeconds}`);
  if (delaySeconds === 0) return 0;
  return (delaySeconds + cadencePhase(`${service}:archive`, delaySeconds)) * 1000;
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
    const firstMs = this.options.initialDelayMs ?? firstArchiveCycleMs(this.options.engine.service, this.options.firstCycleDelaySeconds ?? DEFAULT_FIRST_CYCLE_DELAY_SECONDS);
    this.logger.info({ firstCycleInMs: firstMs, everyMinutes: this.options.everyMinutes }, 'archive runner started');
    await runEvery(
      signal,
      { firstMs, everyMs: this.options.everyMinutes * 60_000 },
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
