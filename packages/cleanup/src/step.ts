import type { Sql } from '@craig/db';
import { JobNotFound } from './errors.ts';
import { runStep, runStepWindow, type StepOptions, type WindowOptions } from './internal/step-run.ts';
import type { StepResult } from './types.ts';

export { MAX_WINDOW_STEPS, STEP_ROW_BUDGET, STEP_SCAN_WINDOW, type StepOptions, type StepTimings, type WindowOptions } from './internal/step-run.ts';

/**
 * Run step `stepNo` of a deleting job: one statement (the `cleanup_step` function, one round
 * trip, its own transaction unless `sql` is already in one) that visits and deletes at most 128
 * source rows and commits them together with the job's counters, cursor and the step's record.
 *
 * In the `items` phase it walks one library of the scope from the cursor in id order up to the
 * high-water id, takes the gate locks in order (source table, coordinator, job row, server,
 * libraries by id; gates NOWAIT), re-reads each candidate and deletes it only if its id,
 * membership and `xmin` are what discovery saw: a row that left for an open library counts as
 * moved, a vanished one as already absent, a changed revision is retained for another pass.
 * When the walk is done, a `verify` step runs the final absence check with admission still
 * closed; then a prune job reopens its library and completes, and removal jobs delete the
 * emptied library, or each emptied library (one per step) and then the empty server.
 *
 * Steps are numbered from 1; `status(...).nextStep` is the next one. Calling a step number that
 * already completed returns its recorded result (`replayed: true`) and deletes nothing, so a
 * caller that lost the answer (a crash, a timeout) simply calls it again. A later number than
 * the next is a `JobStateConflict`; so is stepping a job that is still collecting.
 */
export function step(sql: Sql, jobId: number, stepNo: number, options: StepOptions = {}): Promise<StepResult> {
  return runStep(sql, jobId, stepNo, options);
}

/**
 * Steps `firstStep`, `firstStep + 1`, … of a deleting job in one transaction: at most
 * `maxSteps` of them, none started after `maxMs`, stopping when the job finishes. Each is a
 * {@link step} with every guarantee of one (≤ 128 rows, revision checks, its own record); they
 * commit together, or on any failure none of them does. Replaying a committed window returns
 * its steps' recorded results.
 */
export function stepWindow(sql: Sql, jobId: number, firstStep: number, options: WindowOptions): Promise<StepResult[]> {
  return runStepWindow(sql, jobId, firstStep, options);
}

/** Step a job until it completes (or `maxSteps` ran), resuming from its persisted next step. */
export async function runToCompletion(
  sql: Sql,
  jobId: number,
  options: StepOptions & { readonly maxSteps?: number; readonly signal?: AbortSignal; readonly onStep?: (result: StepResult) => void } = {},
): Promise<{ readonly steps: number; readonly done: boolean }> {
  const [row] = await sql<{ steps_done: number; state: string }[]>`select steps_done, state from cleanup_jobs where id = ${jobId}`;
  if (!row) throw new JobNotFound(jobId);
  if (row.state !== 'deleting') return { steps: 0, done: row.state === 'completed' };
  let next = row.steps_done + 1;
  let steps = 0;
  const max = options.maxSteps ?? Number.POSITIVE_INFINITY;
  while (steps < max && !options.signal?.aborted) {
    const result = await runStep(sql, jobId, next, options);
    options.onStep?.(result);
    steps++;
    next = result.stepNo + 1;
    if (result.done) return { steps, done: true };
  }
  return { steps, done: false };
}
