import { setTimeout as sleep } from 'node:timers/promises';
import { LOCK_KEYS, sessionWalCompressor, withDedicatedSession, type Sql, type WalCompressionMethod } from '@craig/db';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { CleanupError } from './errors.ts';
import { sweepCleanupHistory } from './history.ts';
import { cancelExpiredJobs } from './jobs.ts';
import { cleanupMetrics } from './metrics.ts';
import { MAX_WINDOW_STEPS, runStepWindow, type StepOptions } from './internal/step-run.ts';
import type { RowCounts } from './types.ts';

export interface CleanupRunnerOptions {
  /** The service's database URL; the runner opens its own dedicated session on it. */
  readonly url: string;
  readonly service: string;
  /** Run the runner's sessions as this role (the runtime role). */
  readonly role?: string;
  /**
   * A pool for the cheap "is there any work?" check that precedes each cycle, so an idle runner
   * does not open a dedicated session every `idleMs`. Without it every cycle opens one.
   */
  readonly sql?: Sql;
  /** Days a finished job's history is kept (`CLEANUP_JOB_RETENTION_DAYS`). */
  readonly historyRetentionDays: number;
  readonly logger?: Logger;
  readonly registry?: Registry;
  /** Pause between cycles when there is nothing to do; default 1,000 ms. */
  readonly idleMs?: number;
  /** Pause between two step windows, giving sync writers room; default {@link DEFAULT_STEP_PAUSE_MS}. */
  readonly stepPauseMs?: number;
  /**
   * Steps per transaction (one `cleanup_step_window` call): at most `maxSteps` (default
   * {@link DEFAULT_WINDOW_STEPS}), none started after `maxMs` (default {@link DEFAULT_WINDOW_MS}).
   * `{ maxSteps: 1 }` is one step per transaction.
   */
  readonly window?: { readonly maxSteps?: number; readonly maxMs?: number };
  /** Steps per cycle before the session is closed and the lock offered to other replicas; default 2,000. */
  readonly maxStepsPerCycle?: number;
  /** How often the history sweep runs; default hourly. */
  readonly historyEveryMs?: number;
  readonly stepOptions?: StepOptions;
  /**
   * Compress the full-page images of the steps' deletes on the runner's session (ADR-069):
   * default `'lz4'`, kept when the server compresses already; `false` leaves the server's
   * setting. A role without `SET ON PARAMETER wal_compression` steps uncompressed and the
   * runner says so once.
   */
  readonly walCompression?: WalCompressionMethod | false;
}

/**
 * The runner's default pause between steps. Back-to-back steps keep a database backend busy;
 * on the 2-core reference machine a 2 ms pause kept the p99 of sync writes to other libraries
 * within 1.5× of idle while the prune ran at ~0.13× an unbounded DELETE (ADR-060).
 */
export const DEFAULT_STEP_PAUSE_MS = 2;
/**
 * Steps per window by default (ADR-060, step windows): one round trip and commit for up to
 * sixteen 128-row steps. With {@link DEFAULT_WINDOW_MS} it gave 0.335–0.346 of an unbounded
 * DELETE against 0.294–0.300 for 8 steps / 20 ms, at the same writer p99 (ADR-070).
 */
export const DEFAULT_WINDOW_STEPS = 16;
/** A window starts no step after this many ms, so a transaction stays short whatever the steps cost (ADR-070). */
export const DEFAULT_WINDOW_MS = 40;

export interface CycleReport {
  /** Another replica holds the runner lock. */
  readonly skipped: boolean;
  readonly steps: number;
  readonly jobsFinished: number;
  readonly cancelledExpired: number;
  /** Steps that hit contention (NOWAIT, lock timeout) and will be retried. */
  readonly busy: number;
  readonly failed: number;
  readonly counts: Pick<RowCounts, 'deleted' | 'moved' | 'alreadyAbsent' | 'retained'>;
  /** `wal_compression` on the cycle's session ('off': uncompressed); undefined when the cycle did not hold the lock. */
  readonly walCompression: string | undefined;
}

export interface CleanupRunner {
  /** Start cycling in the background. */
  start(): void;
  /** Stop after the step in flight and wait for it. */
  stop(): Promise<void>;
  /** One cycle: cancel expired collecting jobs, then step deleting jobs (oldest first) to completion or the cycle's budget. */
  runCycle(signal?: AbortSignal): Promise<CycleReport>;
}

/**
 * The worker loop: one runner per database steps jobs to completion. It holds
 * `LOCK_KEYS.cleanupCoordinator` on a dedicated session for the length of a cycle (a replica
 * that cannot get it skips the cycle), cancels collecting jobs past their deadline, and steps
 * every deleting job in id order, resuming from each job's persisted next step. Contention
 * (AdmissionBusy, lock timeouts) ends that job's turn for this cycle; the next cycle retries.
 * The history sweep runs on its own lock key every `historyEveryMs`.
 */
export function createCleanupRunner(options: CleanupRunnerOptions): CleanupRunner {
  const logger = options.logger ?? pino({ level: 'silent' });
  const metrics = cleanupMetrics(options.registry ?? new Registry());
  const idleMs = options.idleMs ?? 1_000;
  const maxSteps = options.maxStepsPerCycle ?? 2_000;
  const historyEveryMs = options.historyEveryMs ?? 3_600_000;
  const stepPauseMs = options.stepPauseMs ?? DEFAULT_STEP_PAUSE_MS;
  const windowSteps = options.window?.maxSteps ?? DEFAULT_WINDOW_STEPS;
  const windowMs = options.window?.maxMs ?? DEFAULT_WINDOW_MS;
  if (!Number.isInteger(windowSteps) || windowSteps < 1 || windowSteps > MAX_WINDOW_STEPS) throw new RangeError(`window.maxSteps must be an integer in 1..${MAX_WINDOW_STEPS}: ${windowSteps}`);
  if (!Number.isInteger(windowMs) || windowMs < 1 || windowMs > 1000) throw new RangeError(`window.maxMs must be an integer in 1..1000: ${windowMs}`);
  const sessionOptions = { service: `${options.service}:cleanup`, ...(options.role === undefined ? {} : { role: options.role }) };
  let controller: AbortController | undefined;
  let loop: Promise<void> | undefined;
  let lastHistory = 0;
  // A refused `SET wal_compression` is warned about once per runner.
  const compressWal = sessionWalCompressor('cleanup runner');

  async function runCycle(signal?: AbortSignal): Promise<CycleReport> {
    const report = { walCompression: undefined as string | undefined, skipped: false, steps: 0, jobsFinished: 0, cancelledExpired: 0, busy: 0, failed: 0, counts: { deleted: 0, moved: 0, alreadyAbsent: 0, retained: 0 } };
    if (options.sql) {
      // Each count on its state's partial index; the same look feeds the stuck-job gauges.
      const [work] = await options.sql<{ deleting: number; collecting: number; expired: number; oldest_step: number | null }[]>`
        select (select count(*) from cleanup_jobs where state = 'deleting')::int as deleting,
               (select count(*) from cleanup_jobs where state = 'collecting')::int as collecting,
               (select count(*) from cleanup_jobs where state = 'collecting' and collect_deadline_at <= now())::int as expired,
               (select extract(epoch from min(updated_at)) from cleanup_jobs where state = 'deleting')::float8 as oldest_step`;
      metrics.activeJobs.set({ state: 'deleting' }, work?.deleting ?? 0);
      metrics.activeJobs.set({ state: 'collecting' }, work?.collecting ?? 0);
      metrics.oldestDeletingStep.set(work?.oldest_step ?? 0);
      if (!work || (work.deleting === 0 && work.expired === 0)) return report;
    }
    const started = performance.now();
    const result = await withDedicatedSession(
      options.url,
      async (session) => {
        if (!(await session.tryAdvisoryLock(LOCK_KEYS.cleanupCoordinator))) return { ...report, skipped: true };
        // A step's WAL is mostly full-page images of the pages it deletes from; compressed, a
        // sync writer's commits wait behind less of it (ADR-069).
        const wal = await compressWal(session.sql, options.walCompression ?? 'lz4', logger);
        report.walCompression = wal.setting;
        report.cancelledExpired = (await cancelExpiredJobs(session.sql)).length;
        const jobs = await session.sql<{ id: string; kind: string; steps_done: number }[]>`
          select id, kind, steps_done from cleanup_jobs where state = 'deleting' order by id`;
        for (const job of jobs) {
          if (report.steps >= maxSteps || session.signal.aborted) break;
          await stepJob(session.sql, Number(job.id), job.kind, job.steps_done + 1, report, session.signal);
        }
        return report;
      },
      { ...sessionOptions, ...(signal ? { signal } : {}) },
    ).catch((error: unknown) => {
      if (signal?.aborted) return report;
      throw error;
    });
    if (!result.skipped && (result.steps > 0 || result.cancelledExpired > 0 || result.failed > 0)) {
      logger.info({ ...result, ms: Math.round(performance.now() - started) }, 'cleanup cycle');
    }
    return result;
  }

  async function stepJob(sql: Sql, jobId: number, kind: string, first: number, report: { steps: number; jobsFinished: number; busy: number; failed: number; counts: Record<'deleted' | 'moved' | 'alreadyAbsent' | 'retained', number> }, signal: AbortSignal) {
    let next = first;
    while (report.steps < maxSteps && !signal.aborted) {
      let phase = 'unknown';
      try {
        const results = await runStepWindow(sql, jobId, next, {
          ...options.stepOptions,
          maxSteps: Math.min(windowSteps, maxSteps - report.steps),
          maxMs: windowMs,
          onTimings: (t) => {
            phase = t.phase;
            metrics.stepSeconds.observe({ phase: t.phase }, t.totalMs / 1000);
            options.stepOptions?.onTimings?.(t);
          },
        });
        for (const result of results) {
          report.steps++;
          metrics.steps.inc({ kind, phase: result.phase, outcome: result.replayed ? 'replayed' : 'ok' });
          const c = result.counts;
          for (const [outcome, n] of [['deleted', c.deleted], ['moved', c.moved], ['already_absent', c.alreadyAbsent], ['retained', c.retained], ['kept', c.kept]] as const) {
            if (n > 0) metrics.rows.inc({ outcome }, n);
          }
          report.counts.deleted += c.deleted;
          report.counts.moved += c.moved;
          report.counts.alreadyAbsent += c.alreadyAbsent;
          report.counts.retained += c.retained;
          logger.debug({ jobId, step: result.stepNo, phase: result.phase, ...c, phaseAfter: result.phaseAfter }, 'cleanup step');
          if (result.done) {
            report.jobsFinished++;
            metrics.jobsFinished.inc({ kind, state: 'completed' });
            return;
          }
          next = result.stepNo + 1;
        }
        if (stepPauseMs > 0) await sleep(stepPauseMs, undefined, { signal }).catch(() => undefined);
      } catch (error) {
        if (signal.aborted) return;
        const retryable = error instanceof CleanupError ? error.retryable : (error as { code?: string }).code === '55P03' || (error as { code?: string }).code === '40P01';
        metrics.steps.inc({ kind, phase, outcome: retryable ? 'busy' : 'failed' });
        if (retryable) report.busy++;
        else report.failed++;
        logger[retryable ? 'warn' : 'error']({ jobId, step: next, err: error }, retryable ? 'cleanup step contended; retrying next cycle' : 'cleanup step failed');
        return;
      }
    }
  }

  async function sweepIfDue(signal: AbortSignal) {
    if (Date.now() - lastHistory < historyEveryMs) return;
    lastHistory = Date.now();
    try {
      const swept = await sweepCleanupHistory(options.url, { ...sessionOptions, retentionDays: options.historyRetentionDays, signal, logger });
      for (const [table, n] of Object.entries(swept.deleted)) if (n > 0) metrics.historyRows.inc({ table }, n);
    } catch (error) {
      if (!signal.aborted) logger.error({ err: error }, 'cleanup history sweep failed');
    }
  }

  return {
    runCycle,
    start() {
      if (loop) return;
      controller = new AbortController();
      const { signal } = controller;
      loop = (async () => {
        while (!signal.aborted) {
          let report: CycleReport | undefined;
          try {
            report = await runCycle(signal);
            await sweepIfDue(signal);
          } catch (error) {
            if (!signal.aborted) logger.error({ err: error }, 'cleanup cycle failed');
          }
          // A cycle that used its whole budget left work behind: go again at once.
          if (!(report && report.steps >= maxSteps)) await sleep(idleMs, undefined, { signal }).catch(() => undefined);
        }
      })();
    },
    async stop() {
      controller?.abort();
      await loop;
      loop = undefined;
    },
  };
}
