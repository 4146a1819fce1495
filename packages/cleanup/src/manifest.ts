import type { Sql } from '@craig/db';
import { InvalidJobRequest, JobNotFound, JobStateConflict, ManifestCountMismatch } from './errors.ts';
import { validateExternalIds } from './external-ids.ts';
import { cancelExpiredJobs, lockJob } from './jobs.ts';
import { toStatus, type JobRow } from './internal/rows.ts';
import { assertId, protocolTx } from './internal/tx.ts';
import type { JobStatus } from './types.ts';

export interface AppendSeenResult {
  /** Ids in the call (after validation). */
  readonly received: number;
  /** Ids new to the manifest. */
  readonly added: number;
  /** Ids the manifest already held, or repeated within the call: idempotent. */
  readonly duplicates: number;
}

/**
 * Append one page of seen external ids to a collecting job's manifest: at most 128, all
 * validated before anything is written; ids already present are ignored, so a retried page is
 * harmless. Refused unless the job is `collecting`; a job past its collect deadline is
 * cancelled instead.
 */
export async function appendSeen(sql: Sql, jobId: number, externalIds: readonly string[]): Promise<AppendSeenResult> {
  assertId('jobId', jobId);
  const ids = validateExternalIds(externalIds);
  const outcome = await protocolTx(sql, async (tx) => {
    // Shared: pages append concurrently; seal and cancel (FOR UPDATE) wait for them.
    const [job] = await tx<{ state: string; expired: boolean }[]>`
      select state, coalesce(collect_deadline_at <= now(), false) as expired from cleanup_jobs where id = ${jobId} for share`;
    if (!job) throw new JobNotFound(jobId);
    if (job.state !== 'collecting') throw new JobStateConflict(jobId, job.state, 'appendSeen', 'ids are appended only while collecting');
    if (job.expired) return 'expired' as const;
    if (ids.length === 0) return 0;
    const inserted = await tx`
      insert into cleanup_manifest (job_id, external_id)
      select ${jobId}, x from unnest(${ids}::text[]) as x
      on conflict do nothing`;
    return inserted.count;
  });
  if (outcome === 'expired') throw await expiredConflict(sql, jobId, 'appendSeen');
  return { received: externalIds.length, added: outcome, duplicates: externalIds.length - outcome };
}

export interface SealOptions {
  /** How many unique ids the complete traversal saw. Must equal the manifest's size. */
  readonly expectedUniqueCount: number;
}

/**
 * Seal a collecting prune job's manifest after a complete traversal: the manifest must hold
 * exactly `expectedUniqueCount` unique ids (else {@link ManifestCountMismatch}, and the job stays
 * collecting). Sealing fences the library (`FOR UPDATE NOWAIT`: an in-flight sync write makes
 * this fail with `AdmissionBusy`, retry later), closes its admission, records the source
 * high-water id and moves the job to `deleting`. An empty manifest sealed with 0 means the
 * library is empty now: every item in it goes.
 */
export async function seal(sql: Sql, jobId: number, options: SealOptions): Promise<JobStatus> {
  assertId('jobId', jobId);
  const expected = options.expectedUniqueCount;
  if (!Number.isSafeInteger(expected) || expected < 0) {
    throw new InvalidJobRequest(`expectedUniqueCount must be a non-negative integer, got ${JSON.stringify(expected) ?? String(expected)}`, 'expectedUniqueCount', expected);
  }
  const outcome = await protocolTx(sql, async (tx) => {
    const job = await lockJob(tx, jobId, { source: true });
    if (job.state !== 'collecting') throw new JobStateConflict(jobId, job.state, 'seal', 'only a collecting job can be sealed');
    if (job.expired) return 'expired' as const;
    const [{ n } = { n: 0 }] = await tx<{ n: number }[]>`select count(*)::int as n from cleanup_manifest where job_id = ${jobId}`;
    if (n !== expected) throw new ManifestCountMismatch(jobId, expected, n);
    const libraryId = Number(job.library_id);
    await tx`select id from libraries where id = ${libraryId} for update nowait`;
    await tx`update libraries set admission = 'draining', cleanup_job_id = ${jobId}, updated_at = now() where id = ${libraryId}`;
    const [row] = await tx<JobRow[]>`
      update cleanup_jobs
      set state = 'deleting', phase = 'items', expected_unique_count = ${expected}, sealed_at = now(), updated_at = now(),
          high_water_id = (select coalesce(max(id), 0) from items), cursor_library_id = library_id, cursor_item_id = 0
      where id = ${jobId}
      returning *, ${n}::int as manifest_count`;
    return toStatus(row!);
  });
  if (outcome === 'expired') throw await expiredConflict(sql, jobId, 'seal');
  return outcome;
}

async function expiredConflict(sql: Sql, jobId: number, operation: string): Promise<JobStateConflict> {
  await cancelExpiredJobs(sql);
  return new JobStateConflict(jobId, 'cancelled', operation, 'the collect deadline passed: the job was cancelled; start a new sync');
}
