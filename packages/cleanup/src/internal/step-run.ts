import type { Sql, TransactionSql } from '@craig/db';
import { CleanupError, JobStateConflict } from '../errors.ts';
import { lockJob } from '../jobs.ts';
import type { JobPhase, JobState, RowCounts, StepResult } from '../types.ts';
import { toStepResult, ZERO_COUNTS, type JobRow, type StepRow } from './rows.ts';
import { assertId, protocolTx } from './tx.ts';

/** Most candidate rows one step compares and deletes (seed 004). */
export const STEP_ROW_BUDGET = 128;
/**
 * Most rows of its scope one prune step reads to find its candidates: rows in the manifest are
 * passed over (kept), so a long run of seen items costs a bounded read per step, not one huge one.
 */
export const STEP_SCAN_WINDOW = 1024;

/** Where one step's time went, in milliseconds. */
export interface StepTimings {
  readonly phase: JobPhase;
  /** Begin, timeouts, source table, coordinator and job row locks, replay check. */
  readonly lockMs: number;
  /** Candidate selection (the scope walk, with the manifest anti-join for prune jobs). */
  readonly discoverMs: number;
  /** Ordered gate locks: the server and library rows, FOR UPDATE NOWAIT. */
  readonly fenceMs: number;
  /** Re-reading and locking the candidates to compare id, membership and xmin. */
  readonly compareMs: number;
  /** The delete itself (with its cascades), or a phase's own check/parent delete. */
  readonly deleteMs: number;
  /** Counters, cursor and the step record. */
  readonly recordMs: number;
  readonly commitMs: number;
  readonly totalMs: number;
}

export interface StepOptions {
  /** Candidates per step, 1–128; default 128. */
  readonly rowBudget?: number;
  /** Called after a step that did work (not a replay) with its per-phase timings. */
  readonly onTimings?: (timings: StepTimings) => void;
}

/** Fault-injection points for tests: run between discovery and the gate locks. */
export interface StepHooks {
  readonly afterDiscover?: (candidateIds: readonly number[]) => Promise<void>;
}

interface Outcome {
  readonly counts: RowCounts;
  readonly libraryId: number | null;
  readonly cursorLibraryId: number | null;
  readonly cursorItemId: number;
  /** The walk's position this step ended at (recorded with the step). */
  readonly walkedTo: number;
  readonly phaseAfter: JobPhase;
  readonly stateAfter: JobState;
  readonly pass: number;
}

interface Ctx {
  readonly tx: TransactionSql;
  readonly job: JobRow;
  readonly jobId: number;
  readonly budget: number;
  readonly hooks: StepHooks;
  readonly lap: (name: 'discover' | 'fence' | 'compare' | 'delete') => void;
}

/** `step` with test hooks; see `step` in ../step.ts for the contract. */
export async function runStep(sql: Sql, jobId: number, stepNo: number, options: StepOptions = {}, hooks: StepHooks = {}): Promise<StepResult> {
  assertId('jobId', jobId);
  if (!Number.isSafeInteger(stepNo) || stepNo < 1) throw new RangeError(`stepNo must be a positive integer: ${stepNo}`);
  const budget = options.rowBudget ?? STEP_ROW_BUDGET;
  if (!Number.isInteger(budget) || budget < 1 || budget > STEP_ROW_BUDGET) throw new RangeError(`rowBudget must be an integer in 1..${STEP_ROW_BUDGET}: ${budget}`);

  const started = performance.now();
  let mark = started;
  const spent = { lock: 0, discover: 0, fence: 0, compare: 0, delete: 0, record: 0 };
  const lap = (name: keyof typeof spent) => {
    const now = performance.now();
    spent[name] += now - mark;
    mark = now;
  };
  let phase: JobPhase = 'items';
  let replayed = false;

  const result = await protocolTx(sql, async (tx) => {
    // Lock order: source table, coordinator, job row (then, in the phase, server and libraries).
    const job = await lockJob(tx, jobId, { source: true });
    if (stepNo <= job.steps_done) {
      const [recorded] = await tx<StepRow[]>`select * from cleanup_steps where job_id = ${jobId} and step_no = ${stepNo}`;
      if (!recorded) throw new JobStateConflict(jobId, job.state, 'step', `step ${stepNo} completed, but its record has been removed by the history sweep`);
      replayed = true;
      return toStepResult(recorded, true);
    }
    if (stepNo !== job.steps_done + 1) {
      throw new JobStateConflict(jobId, job.state, 'step', `step ${stepNo} is out of order: the next step is ${job.steps_done + 1}`, job.steps_done + 1);
    }
    if (job.state !== 'deleting') {
      throw new JobStateConflict(
        jobId,
        job.state,
        'step',
        job.state === 'collecting' ? 'still collecting: a partial traversal cannot start deletion; seal the manifest first' : 'the job has finished',
        job.steps_done + 1,
      );
    }
    phase = job.phase;
    lap('lock');
    const outcome = await PHASES[job.phase]({ tx, job, jobId, budget, hooks, lap });
    const row = await record(tx, jobId, stepNo, job.phase, job.pass, outcome);
    lap('record');
    return toStepResult(row, false);
  });

  if (!replayed && options.onTimings) {
    const ended = performance.now();
    options.onTimings({
      phase,
      lockMs: spent.lock,
      discoverMs: spent.discover,
      fenceMs: spent.fence,
      compareMs: spent.compare,
      deleteMs: spent.delete,
      recordMs: spent.record,
      commitMs: ended - mark,
      totalMs: ended - started,
    });
  }
  return result;
}

type PhaseHandler = (ctx: Ctx) => Promise<Outcome>;

const PHASES: Record<JobPhase, PhaseHandler> = {
  collect: async ({ job, jobId }) => {
    throw new JobStateConflict(jobId, job.state, 'step', 'still collecting');
  },
  done: async ({ job, jobId }) => {
    throw new JobStateConflict(jobId, job.state, 'step', 'the job has finished');
  },
  items: itemsPhase,
  verify: verifyPhase,
  library: libraryPhase,
  libraries: librariesPhase,
  server: serverPhase,
};

interface Candidate {
  id: string;
  xmin: string;
  seen: boolean;
}

/**
 * Walk one library of the scope from the cursor, in id order, up to the high-water id: compare
 * and delete at most `budget` candidates (unseen rows), counting kept, deleted, moved,
 * already-absent and retained rows separately.
 */
async function itemsPhase(ctx: Ctx): Promise<Outcome> {
  const { tx, job, jobId, budget, hooks, lap } = ctx;
  const serverId = job.server_id;
  const highWater = Number(job.high_water_id ?? 0);
  let libraryId = job.cursor_library_id === null ? null : Number(job.cursor_library_id);
  let cursor = Number(job.cursor_item_id);
  if (libraryId === null) {
    // A remove-server job starts (and restarts a pass) at its server's first library.
    libraryId = await nextLibrary(tx, serverId, 0);
    cursor = 0;
    if (libraryId === null) return outcome(job, { phaseAfter: 'verify', libraryId: null, cursorLibraryId: null, cursorItemId: 0, walkedTo: 0 });
  }

  const prune = job.kind === 'prune-library';
  const limit = prune ? STEP_SCAN_WINDOW : budget;
  const rows = prune
    ? await tx<Candidate[]>`
        select i.id, i.xmin::text as xmin, (m.external_id is not null) as seen
        from items i
        left join cleanup_manifest m on m.job_id = ${jobId} and m.external_id = i.external_id
        where i.library_id = ${libraryId} and i.id > ${cursor} and i.id <= ${highWater}
        order by i.id
        limit ${limit}`
    : await tx<Candidate[]>`
        select i.id, i.xmin::text as xmin, false as seen
        from items i
        where i.library_id = ${libraryId} and i.id > ${cursor} and i.id <= ${highWater}
        order by i.id
        limit ${limit}`;
  const candidates: Candidate[] = [];
  let kept = 0;
  let walkedTo = cursor;
  let consumed = 0;
  for (const row of rows) {
    if (candidates.length === budget) break;
    consumed++;
    walkedTo = Number(row.id);
    if (row.seen) kept++;
    else candidates.push(row);
  }
  const exhausted = consumed === rows.length && rows.length < limit;
  lap('discover');
  await hooks.afterDiscover?.(candidates.map((c) => Number(c.id)));

  await fence(tx, job, [libraryId]);
  lap('fence');

  let deleted = 0;
  let moved = 0;
  let alreadyAbsent = 0;
  let retained = 0;
  if (candidates.length > 0) {
    // The current version of each candidate, locked until commit: what we compare is what we delete.
    const current = await tx<{ id: string; library_id: string; xmin: string }[]>`
      select id, library_id, xmin::text as xmin from items where id = any(${candidates.map((c) => c.id)}::int8[]) for update`;
    const byId = new Map(current.map((r) => [r.id, r]));
    const deletable: string[] = [];
    for (const c of candidates) {
      const now = byId.get(c.id);
      if (!now) alreadyAbsent++;
      else if (Number(now.library_id) !== libraryId) moved++;
      else if (now.xmin !== c.xmin) retained++;
      else deletable.push(c.id);
    }
    lap('compare');
    if (deletable.length > 0) {
      const result = await tx`delete from items where id = any(${deletable}::int8[])`;
      deleted = result.count;
      // The rows are locked by this transaction: anything else is a broken invariant, and no
      // partial batch is ever recorded as completed.
      if (deleted !== deletable.length) throw new CleanupError('step_invariant', `job ${jobId}: deleted ${deleted} of ${deletable.length} locked candidates`);
    }
    lap('delete');
  }

  const counts = { ...ZERO_COUNTS, visited: candidates.length, kept, deleted, moved, alreadyAbsent, retained };
  if (!exhausted) return outcome(job, { counts, libraryId, cursorLibraryId: libraryId, cursorItemId: walkedTo, walkedTo });
  if (job.kind === 'remove-server') {
    const next = await nextLibrary(tx, serverId, libraryId);
    if (next !== null) return outcome(job, { counts, libraryId, cursorLibraryId: next, cursorItemId: 0, walkedTo });
    return outcome(job, { counts, libraryId, phaseAfter: 'verify', cursorLibraryId: null, cursorItemId: 0, walkedTo });
  }
  return outcome(job, { counts, libraryId, phaseAfter: 'verify', cursorLibraryId: libraryId, cursorItemId: 0, walkedTo });
}

/**
 * The final absence check, while admission is still closed. Anything unseen left in scope (a
 * retained revision) starts another pass; otherwise a prune job reopens its library and
 * completes, and a removal job moves on to its parents.
 */
async function verifyPhase(ctx: Ctx): Promise<Outcome> {
  const { tx, job, jobId, lap } = ctx;
  const libraryId = job.library_id === null ? null : Number(job.library_id);
  await fence(tx, job, libraryId === null ? [] : [libraryId]);
  lap('fence');
  let remaining: boolean;
  if (job.kind === 'prune-library') {
    [{ remaining } = { remaining: true }] = await tx<{ remaining: boolean }[]>`
      select exists (
        select 1 from items i
        where i.library_id = ${libraryId}
          and not exists (select 1 from cleanup_manifest m where m.job_id = ${jobId} and m.external_id = i.external_id)
      ) as remaining`;
  } else if (job.kind === 'remove-library') {
    [{ remaining } = { remaining: true }] = await tx<{ remaining: boolean }[]>`select exists (select 1 from items where library_id = ${libraryId}) as remaining`;
  } else {
    [{ remaining } = { remaining: true }] = await tx<{ remaining: boolean }[]>`select exists (select 1 from items where server_id = ${job.server_id}) as remaining`;
  }
  lap('delete');
  if (remaining) {
    return outcome(job, { libraryId, phaseAfter: 'items', pass: job.pass + 1, cursorLibraryId: job.kind === 'remove-server' ? null : libraryId, cursorItemId: 0, walkedTo: 0 });
  }
  if (job.kind === 'prune-library') {
    // Admission reopens only after the check passed, in the same transaction.
    await tx`update libraries set admission = 'open', cleanup_job_id = null, updated_at = now() where id = ${libraryId}`;
    return outcome(job, { libraryId, phaseAfter: 'done', stateAfter: 'completed', cursorLibraryId: libraryId, cursorItemId: 0, walkedTo: 0 });
  }
  return outcome(job, {
    libraryId,
    phaseAfter: job.kind === 'remove-library' ? 'library' : 'libraries',
    cursorLibraryId: libraryId,
    cursorItemId: 0,
    walkedTo: 0,
  });
}

/** remove-library: delete the (verified empty) library; its guard checks the same again. */
async function libraryPhase(ctx: Ctx): Promise<Outcome> {
  const { tx, job, lap } = ctx;
  const libraryId = Number(job.library_id);
  await fence(tx, job, [libraryId]);
  lap('fence');
  const [{ remaining } = { remaining: true }] = await tx<{ remaining: boolean }[]>`select exists (select 1 from items where library_id = ${libraryId}) as remaining`;
  if (remaining) return outcome(job, { libraryId, phaseAfter: 'items', pass: job.pass + 1, cursorLibraryId: libraryId, cursorItemId: 0, walkedTo: 0 });
  const removed = (await tx`delete from libraries where id = ${libraryId}`).count;
  lap('delete');
  return outcome(job, {
    counts: { ...ZERO_COUNTS, librariesRemoved: removed },
    libraryId,
    phaseAfter: 'done',
    stateAfter: 'completed',
    cursorLibraryId: libraryId,
    cursorItemId: 0,
    walkedTo: 0,
  });
}

/** remove-server: delete one empty library per step, lowest id first. */
async function librariesPhase(ctx: Ctx): Promise<Outcome> {
  const { tx, job, lap } = ctx;
  const libraryId = await nextLibrary(tx, job.server_id, 0);
  if (libraryId === null) return outcome(job, { libraryId: null, phaseAfter: 'server', cursorLibraryId: null, cursorItemId: 0, walkedTo: 0 });
  await fence(tx, job, [libraryId]);
  lap('fence');
  const [{ remaining } = { remaining: true }] = await tx<{ remaining: boolean }[]>`select exists (select 1 from items where library_id = ${libraryId}) as remaining`;
  if (remaining) return outcome(job, { libraryId, phaseAfter: 'items', pass: job.pass + 1, cursorLibraryId: null, cursorItemId: 0, walkedTo: 0 });
  const removed = (await tx`delete from libraries where id = ${libraryId}`).count;
  const more = (await nextLibrary(tx, job.server_id, 0)) !== null;
  lap('delete');
  return outcome(job, {
    counts: { ...ZERO_COUNTS, librariesRemoved: removed },
    libraryId,
    phaseAfter: more ? 'libraries' : 'server',
    cursorLibraryId: null,
    cursorItemId: 0,
    walkedTo: 0,
  });
}

/** remove-server: delete the server once it has no libraries left. */
async function serverPhase(ctx: Ctx): Promise<Outcome> {
  const { tx, job, lap } = ctx;
  await fence(tx, job, []);
  lap('fence');
  if ((await nextLibrary(tx, job.server_id, 0)) !== null) return outcome(job, { libraryId: null, phaseAfter: 'libraries', cursorLibraryId: null, cursorItemId: 0, walkedTo: 0 });
  const removed = (await tx`delete from servers where id = ${job.server_id}`).count;
  lap('delete');
  return outcome(job, {
    counts: { ...ZERO_COUNTS, serversRemoved: removed },
    libraryId: null,
    phaseAfter: 'done',
    stateAfter: 'completed',
    cursorLibraryId: null,
    cursorItemId: 0,
    walkedTo: 0,
  });
}

/**
 * The gate locks of a step, in order: the server row (remove-server jobs own it), then the
 * libraries in ascending id, all FOR UPDATE NOWAIT. A concurrent holder fails the step at once
 * (AdmissionBusy); the runner retries it later.
 */
async function fence(tx: TransactionSql, job: JobRow, libraryIds: readonly number[]): Promise<void> {
  if (job.kind === 'remove-server') await tx`select id from servers where id = ${job.server_id} for update nowait`;
  const ordered = [...new Set(libraryIds)].sort((a, b) => a - b);
  if (ordered.length > 0) await tx`select id from libraries where id = any(${ordered}::int8[]) order by id for update nowait`;
}

async function nextLibrary(tx: TransactionSql, serverId: number, after: number): Promise<number | null> {
  const [row] = await tx<{ id: string }[]>`select id from libraries where server_id = ${serverId} and id > ${after} order by id limit 1`;
  return row ? Number(row.id) : null;
}

function outcome(
  job: JobRow,
  o: Partial<Outcome> & Pick<Outcome, 'libraryId' | 'cursorLibraryId' | 'cursorItemId' | 'walkedTo'>,
): Outcome {
  return {
    counts: o.counts ?? ZERO_COUNTS,
    libraryId: o.libraryId,
    cursorLibraryId: o.cursorLibraryId,
    cursorItemId: o.cursorItemId,
    walkedTo: o.walkedTo,
    phaseAfter: o.phaseAfter ?? job.phase,
    stateAfter: o.stateAfter ?? 'deleting',
    pass: o.pass ?? job.pass,
  };
}

/** Counters, cursor and the step record: one statement, in the step's transaction. */
async function record(tx: TransactionSql, jobId: number, stepNo: number, phase: JobPhase, pass: number, o: Outcome): Promise<StepRow> {
  const c = o.counts;
  const [row] = await tx<StepRow[]>`
    with job as (
      update cleanup_jobs set
        steps_done = ${stepNo},
        state = ${o.stateAfter},
        phase = ${o.phaseAfter},
        pass = ${o.pass},
        cursor_library_id = ${o.cursorLibraryId},
        cursor_item_id = ${o.cursorItemId},
        visited = visited + ${c.visited},
        kept = kept + ${c.kept},
        deleted = deleted + ${c.deleted},
        moved = moved + ${c.moved},
        already_absent = already_absent + ${c.alreadyAbsent},
        retained = retained + ${c.retained},
        libraries_removed = libraries_removed + ${c.librariesRemoved},
        servers_removed = servers_removed + ${c.serversRemoved},
        finished_at = case when ${o.stateAfter} = 'completed' then now() end,
        updated_at = now()
      where id = ${jobId}
      returning id
    )
    insert into cleanup_steps (job_id, step_no, phase, pass, library_id, visited, kept, deleted, moved, already_absent, retained,
                               libraries_removed, servers_removed, cursor_item_id, state_after, phase_after)
    select job.id, ${stepNo}, ${phase}, ${pass}, ${o.libraryId}, ${c.visited}, ${c.kept}, ${c.deleted}, ${c.moved}, ${c.alreadyAbsent}, ${c.retained},
           ${c.librariesRemoved}, ${c.serversRemoved}, ${o.walkedTo}, ${o.stateAfter}, ${o.phaseAfter}
    from job
    returning *`;
  return row!;
}
