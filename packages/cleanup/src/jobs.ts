import type { Sql, TransactionSql } from '@craig/db';
import { InvalidJobRequest, JobNotFound, JobStateConflict, ServerBusy, TargetNotFound } from './errors.ts';
import { toStatus, type JobRow } from './internal/rows.ts';
import { assertId, assertServerId, lockSourceAndCoordinator, protocolTx } from './internal/tx.ts';
import { JOB_KINDS, type JobKind, type JobStatus } from './types.ts';

export interface CreateJobInput {
  readonly serverId: number;
  /** Required for `prune-library` and `remove-library`; absent for `remove-server`. */
  readonly libraryId?: number;
  readonly kind: JobKind;
}

export interface CreateJobOptions {
  /** A collecting job older than this is cancelled (`CLEANUP_COLLECT_DEADLINE_MINUTES`); default 60. */
  readonly collectDeadlineMinutes?: number;
}

export const DEFAULT_COLLECT_DEADLINE_MINUTES = 60;

/**
 * Start a cleanup job. A prune job starts `collecting` (admission stays open until `seal`);
 * a removal job closes admission at once (its library, or its whole server, starts draining)
 * and starts `deleting`. Jobs on one server are serialized, collecting ones included: a second
 * is refused with {@link ServerBusy}, unless the first is a collecting job past its deadline,
 * which is cancelled here so an abandoned sync cannot block its server forever.
 */
export async function createJob(sql: Sql, input: CreateJobInput, options: CreateJobOptions = {}): Promise<JobStatus> {
  const { serverId, libraryId, kind } = input;
  if (!JOB_KINDS.includes(kind)) throw new InvalidJobRequest(`kind must be one of ${JOB_KINDS.join(', ')}, got ${JSON.stringify(kind)}`, 'kind', kind);
  assertServerId(serverId);
  if (kind === 'remove-server') {
    if (libraryId !== undefined) throw new InvalidJobRequest('a remove-server job takes no libraryId', 'libraryId', libraryId);
  } else {
    assertId('libraryId', libraryId);
  }
  const deadline = options.collectDeadlineMinutes ?? DEFAULT_COLLECT_DEADLINE_MINUTES;
  if (!Number.isInteger(deadline) || deadline < 1) throw new RangeError(`collectDeadlineMinutes must be a positive integer: ${deadline}`);

  return protocolTx(sql, async (tx) => {
    await lockSourceAndCoordinator(tx, serverId);
    const [server] = await tx<{ id: number }[]>`select id from servers where id = ${serverId}`;
    if (!server) throw new TargetNotFound('server', serverId);
    if (libraryId !== undefined) {
      const [library] = await tx<{ server_id: number }[]>`select server_id from libraries where id = ${libraryId}`;
      if (!library) throw new TargetNotFound('library', libraryId);
      if (library.server_id !== serverId) throw new InvalidJobRequest(`library ${libraryId} belongs to server ${library.server_id}, not ${serverId}`, 'libraryId', libraryId);
    }

    // The job row lock comes after the coordinator: the same order as seal, step and cancel.
    const [active] = await tx<(JobRow & { expired: boolean })[]>`
      select *, coalesce(collect_deadline_at <= now(), false) as expired
      from cleanup_jobs where server_id = ${serverId} and state in ('collecting', 'deleting')
      for update`;
    if (active) {
      if (active.state !== 'collecting' || !active.expired) throw new ServerBusy(serverId, Number(active.id), active.kind, active.state);
      await cancelRow(tx, Number(active.id), 'deadline');
    }

    let rows: JobRow[];
    if (kind === 'prune-library') {
      rows = await tx<JobRow[]>`
        insert into cleanup_jobs (server_id, library_id, kind, state, phase, collect_deadline_at)
        values (${serverId}, ${libraryId!}, ${kind}, 'collecting', 'collect', now() + make_interval(mins => ${deadline}))
        returning *`;
    } else {
      // Parent removal closes admission immediately: fence first (NOWAIT: contention fails
      // now and is retried later), then record the high-water id under the fence.
      if (kind === 'remove-server') await tx`select id from servers where id = ${serverId} for update nowait`;
      else await tx`select id from libraries where id = ${libraryId!} for update nowait`;
      rows = await tx<JobRow[]>`
        insert into cleanup_jobs (server_id, library_id, kind, state, phase, high_water_id, sealed_at, cursor_library_id)
        values (${serverId}, ${libraryId ?? null}, ${kind}, 'deleting', 'items', (select coalesce(max(id), 0) from items), now(), ${libraryId ?? null})
        returning *`;
      const job = rows[0]!;
      if (kind === 'remove-server') await tx`update servers set admission = 'draining', cleanup_job_id = ${job.id}, updated_at = now() where id = ${serverId}`;
      else await tx`update libraries set admission = 'draining', cleanup_job_id = ${job.id}, updated_at = now() where id = ${libraryId!}`;
    }
    return toStatus({ ...rows[0]!, manifest_count: 0 });
  }).catch((error: unknown) => {
    // The partial unique index is the last word on serialization, should anything race past the coordinator.
    if ((error as { code?: unknown; constraint_name?: unknown }).constraint_name === 'cleanup_jobs_one_active_per_server') {
      throw new ServerBusy(serverId, 0, 'unknown', 'unknown', error);
    }
    throw error;
  });
}

/** Cancel a collecting job. Once deletion has started a job only goes forward. */
export async function cancel(sql: Sql, jobId: number): Promise<JobStatus> {
  assertId('jobId', jobId);
  return protocolTx(sql, async (tx) => {
    const job = await lockJob(tx, jobId);
    if (job.state !== 'collecting') {
      throw new JobStateConflict(jobId, job.state, 'cancel', job.state === 'cancelled' ? 'already cancelled' : 'only a collecting job can be cancelled; once deletion starts, recovery resumes forward');
    }
    return toStatus(await cancelRow(tx, jobId, 'requested'));
  });
}

/** A job's state, phase, cursor and counts. */
export async function status(sql: Sql, jobId: number): Promise<JobStatus> {
  assertId('jobId', jobId);
  const [row] = await sql<JobRow[]>`
    select j.*, (select count(*)::int from cleanup_manifest m where m.job_id = j.id) as manifest_count
    from cleanup_jobs j where j.id = ${jobId}`;
  if (!row) throw new JobNotFound(jobId);
  return toStatus(row);
}

/**
 * Cancel every collecting job past its deadline (`collect_deadline_at`, computed by the
 * database at creation). Returns the ids cancelled. Each runs in its own protocol transaction.
 */
export async function cancelExpiredJobs(sql: Sql): Promise<number[]> {
  const expired = await sql<{ id: string }[]>`
    select id from cleanup_jobs where state = 'collecting' and collect_deadline_at <= now() order by id limit 100`;
  const cancelled: number[] = [];
  for (const { id } of expired) {
    const jobId = Number(id);
    const done = await protocolTx(sql, async (tx) => {
      const job = await lockJob(tx, jobId);
      const [still] = await tx<{ expired: boolean }[]>`select collect_deadline_at <= now() as expired from cleanup_jobs where id = ${jobId}`;
      if (job.state !== 'collecting' || !still?.expired) return false;
      await cancelRow(tx, jobId, 'deadline');
      return true;
    });
    if (done) cancelled.push(jobId);
  }
  return cancelled;
}

/**
 * Lock a job the protocol's way: its server's coordinator lock, then the job row. Throws
 * {@link JobNotFound}.
 */
export async function lockJob(tx: TransactionSql, jobId: number, options: { source?: boolean } = {}): Promise<JobRow> {
  const [head] = await tx<{ server_id: number }[]>`select server_id from cleanup_jobs where id = ${jobId}`;
  if (!head) throw new JobNotFound(jobId);
  if (options.source) await lockSourceAndCoordinator(tx, head.server_id);
  else await tx`select cleanup_lock_coordinator(${head.server_id}::int)`;
  const [job] = await tx<(JobRow & { expired: boolean })[]>`
    select *, coalesce(collect_deadline_at <= now(), false) as expired from cleanup_jobs where id = ${jobId} for update`;
  if (!job) throw new JobNotFound(jobId);
  return job;
}

async function cancelRow(tx: TransactionSql, jobId: number, reason: 'requested' | 'deadline'): Promise<JobRow> {
  const [row] = await tx<JobRow[]>`
    update cleanup_jobs
    set state = 'cancelled', phase = 'done', cancel_reason = ${reason}, finished_at = now(), updated_at = now()
    where id = ${jobId}
    returning *, (select count(*)::int from cleanup_manifest m where m.job_id = ${jobId}) as manifest_count`;
  return row!;
}
