import { LOCK_KEYS, withDedicatedSession } from '@craig/db';
import { definePruneTarget, defineRetentionSpec, pruneTable, type PruneTarget, type RetentionSpec } from '@craig/mq';
import type { Logger } from 'pino';

export interface SweepHistoryOptions {
  /** Days a finished (completed or cancelled) job's manifest, steps and row are kept (`CLEANUP_JOB_RETENTION_DAYS`). */
  readonly retentionDays: number;
  /** `application_name` of the sweep's dedicated session. */
  readonly service: string;
  /** Run the session as this role (the runtime role). */
  readonly role?: string;
  readonly signal?: AbortSignal;
  readonly logger?: Logger;
  /** Rows per delete statement; default 5,000 (pruneTable's). */
  readonly batchSize?: number;
  /** Most rows one table loses in one sweep; default pruneTable's cap. */
  readonly cap?: number;
  readonly onBatch?: (table: HistoryTable, batch: { deleted: number; ms: number }) => void;
}

export type HistoryTable = 'cleanup_manifest' | 'cleanup_steps' | 'cleanup_jobs';

export interface SweepHistoryResult {
  /** Another sweep held the lock: nothing was done. */
  readonly skipped: boolean;
  readonly deleted: Readonly<Record<HistoryTable, number>>;
  readonly capped: boolean;
  readonly aborted: boolean;
}

/** The three targets, children first; the job row goes only once nothing references it. */
function targets(days: number): ReadonlyArray<readonly [HistoryTable, PruneTarget]> {
  const finished = (sql: Parameters<PruneTarget['eligible']>[0]) =>
    sql`select j.id from cleanup_jobs j where j.state in ('completed', 'cancelled') and j.finished_at < now() - make_interval(days => ${days})`;
  return [
    ['cleanup_manifest', definePruneTarget({ table: 'cleanup_manifest', orderBy: 'job_id', eligible: (sql) => sql`job_id in (${finished(sql)})` })],
    ['cleanup_steps', definePruneTarget({ table: 'cleanup_steps', orderBy: 'job_id', eligible: (sql) => sql`job_id in (${finished(sql)})` })],
    [
      'cleanup_jobs',
      definePruneTarget({
        table: 'cleanup_jobs',
        orderBy: 'id',
        eligible: (sql) => sql`
          state in ('completed', 'cancelled') and finished_at < now() - make_interval(days => ${days})
          and not exists (select 1 from cleanup_manifest m where m.job_id = cleanup_jobs.id)
          and not exists (select 1 from cleanup_steps s where s.job_id = cleanup_jobs.id)`,
      }),
    ],
  ];
}

/**
 * Remove finished jobs' manifests, step records and rows once they are older than the
 * retention period (cutoff computed by the database), through `pruneTable`'s bounded batches,
 * on a dedicated session holding `LOCK_KEYS.cleanupHistorySweep` (one sweeper per database; a
 * second one skips). Active jobs are never touched.
 */
export async function sweepCleanupHistory(url: string, options: SweepHistoryOptions): Promise<SweepHistoryResult> {
  const days = options.retentionDays;
  if (!Number.isInteger(days) || days < 1) throw new RangeError(`retentionDays must be a positive integer: ${days}`);
  return withDedicatedSession(
    url,
    async (session) => {
      const deleted: Record<HistoryTable, number> = { cleanup_manifest: 0, cleanup_steps: 0, cleanup_jobs: 0 };
      if (!(await session.tryAdvisoryLock(LOCK_KEYS.cleanupHistorySweep))) return { skipped: true, deleted, capped: false, aborted: false };
      let capped = false;
      for (const [table, target] of targets(days)) {
        const started = performance.now();
        const result = await pruneTable(session.sql, target, {
          signal: session.signal,
          ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
          ...(options.cap === undefined ? {} : { cap: options.cap }),
          onBatch: (b) => options.onBatch?.(table, b),
        });
        deleted[table] = result.deleted;
        options.logger?.info({ table, deleted: result.deleted, batches: result.batches, capped: result.capped, ms: Math.round(performance.now() - started) }, 'cleanup history swept');
        if (result.aborted) return { skipped: false, deleted, capped, aborted: true };
        // A capped child table leaves rows behind: its jobs stay until the next sweep.
        if (result.capped) capped = true;
      }
      return { skipped: false, deleted, capped, aborted: false };
    },
    { service: options.service, ...(options.role === undefined ? {} : { role: options.role }), ...(options.signal ? { signal: options.signal } : {}) },
  );
}

/**
 * The history invariant, `cleanup_history_retention_overrun`, for `retentionOverrun`
 * (@craig/mq): finished jobs older than the retention window plus the grace. Red means the
 * history sweep is not running or cannot keep up, so the protocol's own tables grow.
 */
export function cleanupRetentionSpecs(retentionDays: number): RetentionSpec[] {
  return [
    defineRetentionSpec({
      name: 'cleanup_history_retention_overrun',
      table: 'cleanup_jobs',
      column: 'finished_at',
      windowDays: retentionDays,
      eligible: (sql) => sql`t.state in ('completed', 'cancelled')`,
    }),
  ];
}
