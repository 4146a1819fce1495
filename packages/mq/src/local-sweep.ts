import { withDedicatedSession, type Sql } from '@craig/db';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { POLL_INTERVAL_MS, PRUNE_EVERY_TICKS, pruneJitter } from './cadence.ts';
import { runEvery } from './every.ts';
import { mqMetrics, perRegistry } from './metrics.ts';
import { readPruneLatches, latchPrune, type PruneLatch } from './prune-latch.ts';
import { PRUNE_CYCLE_CAP, pruneTable, type PruneBatch, type PruneTarget } from './prune-table.ts';

/**
 * A service-local terminal-state sweep (ADR-058 class 1; seed 000's "the same batch loop
 * serves the service-local sweeps with their own lock keys"): what it deletes, under which
 * advisory lock, and what it is called in `prune_latch`, the metrics and the logs.
 */
export interface LocalSweepDefinition {
  /** Its `prune_latch` target, `event_rows_pruned_total{table}` label and log name: usually the table. */
  readonly name: string;
  /** Its own key from `LOCK_KEYS`: one sweeper per database. */
  readonly lockKey: bigint;
  /** The prune target for a window of `days` (> 0): the predicate `pruneTable` selects by and re-checks in the delete. */
  readonly target: (days: number) => PruneTarget;
  /** The service, for the operator's resume command in the latch warning. */
  readonly service: string;
}

export interface LocalSweepOptions {
  /** The service's database; the sweep opens a dedicated session on it for the advisory lock. */
  readonly databaseUrl: string;
  /** The window in days (a setting); 0 disables the sweep. */
  readonly windowDays: number;
  /** `application_name` of the sweep's session; default `<service>:<name>-sweep`. */
  readonly applicationName?: string;
  readonly registry?: Registry;
  readonly logger?: Logger;
  /** Checked between batches: an abort stops the sweep after the batch in flight. */
  readonly signal?: AbortSignal;
  /** Rows per statement; default 5,000. */
  readonly batchSize?: number;
  /** Rows per cycle before the sweep stops and latches; default 1,000,000. */
  readonly cap?: number;
  /** Server-side lock wait per statement (default 5 s): the sweep gives way rather than queue. */
  readonly lockTimeoutMs?: number;
  /** After each batch (awaited): progress, and a seam for tests. */
  readonly onBatch?: (batch: PruneBatch) => unknown;
}

export type LocalSweepStatus =
  /** Deleted everything eligible. */
  | 'pruned'
  /** The window is 0. */
  | 'disabled'
  /** Another session holds the sweep's lock: nothing was done. */
  | 'skipped'
  /** Latched by an earlier capped cycle: nothing deleted until an operator resumes it. */
  | 'latched'
  /** Hit the cap in this cycle, and latched. */
  | 'capped'
  | 'aborted';

export interface LocalSweepResult {
  readonly status: LocalSweepStatus;
  readonly deleted: number;
  readonly batches: number;
  readonly latch?: PruneLatch;
  readonly ms: number;
}

function assertDays(days: number): void {
  if (!Number.isInteger(days) || days < 0 || days > 3650) throw new RangeError(`retention days must be a whole number from 0 to 3650: ${days}`);
}

/** The command that clears the sweep's latch (named in its warnings and the runbook). */
export function resumeCommand(definition: LocalSweepDefinition): string {
  return `pnpm xtask prune ${definition.service} --resume ${definition.name}`;
}

/**
 * One cycle of a service-local sweep: on a dedicated session holding `pg_try_advisory_lock`
 * of the sweep's own key (not got: `skipped`), delete eligible rows through the transport
 * sweep's batch loop (`pruneTable`), capped per cycle. A capped cycle latches the sweep in
 * `prune_latch`, and later cycles delete nothing until `pnpm xtask prune <service> --resume
 * <name>`. The session is closed on every path, so the lock can never strand. Each batch
 * counts into `event_rows_pruned_total{table=<name>}`; one log line per cycle.
 */
export async function runLocalSweep(definition: LocalSweepDefinition, options: LocalSweepOptions): Promise<LocalSweepResult> {
  assertDays(options.windowDays);
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = options.registry ? mqMetrics(options.registry) : undefined;
  const cap = options.cap ?? PRUNE_CYCLE_CAP;
  const name = definition.name;
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  let deleted = 0;
  let result: LocalSweepResult;
  if (options.windowDays === 0) {
    result = { status: 'disabled', deleted: 0, batches: 0, ms: ms() };
  } else {
    try {
      result = await withDedicatedSession(
        options.databaseUrl,
        async (session): Promise<LocalSweepResult> => {
          if (!(await session.tryAdvisoryLock(definition.lockKey))) return { status: 'skipped', deleted: 0, batches: 0, ms: ms() };
          // A batch lost to a crash only brings its rows back, still eligible; the latch commits synchronously.
          await session.sql`set synchronous_commit = off`;
          const latch = (await readPruneLatches(session.sql)).get(name);
          metrics?.pruneCapLatched.set({ table: name }, latch ? 1 : 0);
          if (latch) return { status: 'latched', deleted: 0, batches: 0, latch, ms: ms() };
          const run = await pruneTable(session.sql, definition.target(options.windowDays), {
            cap,
            signal: session.signal,
            ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
            onBatch: async (batch) => {
              deleted = batch.total;
              metrics?.rowsPruned.inc({ table: name }, batch.deleted);
              await options.onBatch?.(batch);
            },
          });
          if (run.capped) {
            const latched = await latchPrune(session.sql, name, { deleted: run.deleted, cap });
            metrics?.pruneCapLatched.set({ table: name }, 1);
            return { status: 'capped', deleted: run.deleted, batches: run.batches, latch: latched, ms: ms() };
          }
          return { status: run.aborted ? 'aborted' : 'pruned', deleted: run.deleted, batches: run.batches, ms: ms() };
        },
        {
          service: options.applicationName ?? `${definition.service}:${name}-sweep`,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
        },
      );
    } catch (error) {
      // The caller's abort, rethrown after a clean return, is an aborted cycle, not a failure.
      if (!(options.signal?.aborted && error === options.signal.reason)) {
        logger.warn({ table: name, deleted, ms: ms(), err: error }, 'local sweep failed');
        throw error;
      }
      result = { status: 'aborted', deleted, batches: 0, ms: ms() };
    }
  }
  const line = { table: name, windowDays: options.windowDays, status: result.status, deleted: result.deleted, batches: result.batches, ms: result.ms };
  if (result.status === 'latched' || result.status === 'capped') {
    logger.warn(
      { ...line, since: result.latch?.latchedAt.toISOString(), deletedWhenCapped: result.latch?.deleted, cap, resume: resumeCommand(definition) },
      'local sweep latched after hitting its cap (a jumped clock?); see docs/runbooks/prune-cap-latched.md',
    );
  } else {
    logger.info(line, 'local sweep');
  }
  return result;
}

export interface LocalSweepPreview {
  readonly disabled: boolean;
  readonly latch: PruneLatch | undefined;
  /** Eligible rows now, counted up to cap + 1. */
  readonly eligible: number;
  readonly wouldDelete: number;
  readonly wouldLatch: boolean;
}

/** What a cycle would do now, deleting nothing (`pnpm xtask prune <service> --dry-run`). */
export async function previewLocalSweep(sql: Sql, definition: LocalSweepDefinition, windowDays: number, cap: number = PRUNE_CYCLE_CAP): Promise<LocalSweepPreview> {
  assertDays(windowDays);
  const latch = (await readPruneLatches(sql)).get(definition.name);
  if (windowDays === 0) return { disabled: true, latch, eligible: 0, wouldDelete: 0, wouldLatch: false };
  const t = definition.target(windowDays);
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from (select 1 from ${sql(t.table)} where ${t.eligible(sql)} limit ${cap + 1}) x`;
  const eligible = row!.n;
  return { disabled: false, latch, eligible, wouldDelete: latch ? 0 : Math.min(eligible, cap), wouldLatch: !latch && eligible > cap };
}

export interface LocalSweepRunnerOptions extends Omit<LocalSweepOptions, 'signal'> {
  /**
   * The service's EVENT_PRUNE_EVERY_TICKS (1 s ticks): the sweep keeps the transport sweep's
   * cadence, so a stack that sweeps every 20 s (the devstack) sweeps its local tables as often.
   * Default {@link PRUNE_EVERY_TICKS} (hourly).
   */
  readonly everyTicks?: number;
  /** Between the starts of two cycles (tests); default `everyTicks` seconds. */
  readonly everyMs?: number;
  /**
   * Before the first cycle; default a deterministic phase within `everyTicks` seeded by
   * `<service>:<name>` ({@link pruneJitter}), so replicas share it (the lock picks one) and the
   * fleet's sweeps spread.
   */
  readonly initialDelayMs?: number;
}

const cycleCounter = perRegistry((registry): Counter<'sweep' | 'status' | 'trigger'> => new Counter({
  name: 'local_sweep_cycles_total',
  help: 'Service-local sweep cycles started by this process, by sweep, status (pruned, disabled, skipped, latched, capped, aborted, failed) and trigger (timer, admin).',
  labelNames: ['sweep', 'status', 'trigger'],
  registers: [registry],
}));

/** Runs a local sweep on its own timer, and once on demand (a service's admin route). */
export class LocalSweepRunner {
  private readonly logger: Logger;
  private readonly cycles: Counter<'sweep' | 'status' | 'trigger'> | undefined;

  constructor(
    readonly definition: LocalSweepDefinition,
    private readonly options: LocalSweepRunnerOptions,
  ) {
    assertDays(options.windowDays);
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: `${definition.name}-sweep` });
    this.cycles = options.registry ? cycleCounter(options.registry) : undefined;
  }

  /** One cycle now; a `skipped` result means another sweeper holds the lock. */
  runNow(signal?: AbortSignal): Promise<LocalSweepResult> {
    return this.cycle('admin', signal);
  }

  /** The timer loop until `signal` aborts; the cycle in flight stops between batches. */
  async run(signal: AbortSignal): Promise<void> {
    const ticks = this.options.everyTicks ?? PRUNE_EVERY_TICKS;
    const every = this.options.everyMs ?? ticks * POLL_INTERVAL_MS;
    const first = this.options.initialDelayMs ?? pruneJitter(`${this.definition.service}:${this.definition.name}`, ticks) * POLL_INTERVAL_MS;
    this.logger.info({ windowDays: this.options.windowDays, everyMs: every, firstInMs: first }, 'local sweep started');
    await runEvery(
      signal,
      { firstMs: first, everyMs: every },
      () => this.cycle('timer', signal),
      // Logged by the sweep; the next cycle tries again. A failed batch deletes nothing.
      () => undefined,
    );
  }

  private async cycle(trigger: 'timer' | 'admin', signal: AbortSignal | undefined): Promise<LocalSweepResult> {
    const sweep = this.definition.name;
    try {
      const { everyTicks: _ticks, everyMs: _every, initialDelayMs: _initial, ...options } = this.options;
      const result = await runLocalSweep(this.definition, { ...options, logger: this.logger, ...(signal ? { signal } : {}) });
      this.cycles?.inc({ sweep, status: result.status, trigger });
      return result;
    } catch (error) {
      this.cycles?.inc({ sweep, status: 'failed', trigger });
      throw error;
    }
  }
}
