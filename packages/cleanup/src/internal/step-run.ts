import type { Sql } from '@craig/db';
import type { JobPhase, StepResult } from '../types.ts';
import { toStepResult, type StepRow } from './rows.ts';
import { translatePgError } from './translate.ts';
import { assertId } from './tx.ts';

/** Most candidate rows one step compares and deletes (seed 004). */
export const STEP_ROW_BUDGET = 128;
/**
 * Most rows of its scope one prune step reads to find its candidates: rows in the manifest are
 * passed over (kept), so a long run of seen items costs a bounded read per step, not one huge one.
 */
export const STEP_SCAN_WINDOW = 1024;

/** Where one step's time went, in milliseconds (measured inside the database, except `roundTripMs`). */
export interface StepTimings {
  readonly phase: JobPhase;
  /** Source table, coordinator and job row locks, replay check. */
  readonly lockMs: number;
  /** Candidate selection: the scope walk, with the manifest probes for prune jobs. */
  readonly discoverMs: number;
  /** Gate locks: the server and library rows, FOR UPDATE NOWAIT. */
  readonly fenceMs: number;
  /** Deleting the candidates whose id, membership and xmin are unchanged (with their cascades) and classifying the rest, or a phase's check and parent delete. */
  readonly deleteMs: number;
  /** Counters, cursor and the step record. */
  readonly recordMs: number;
  /** Everything outside the function: the round trip, the commit, parsing. */
  readonly roundTripMs: number;
  readonly totalMs: number;
}

export interface StepOptions {
  /** Candidates per step, 1–128; default 128. */
  readonly rowBudget?: number;
  /** Called after a step that did work (not a replay) with its per-phase timings. */
  readonly onTimings?: (timings: StepTimings) => void;
}

interface StepCall {
  step: StepRow;
  replayed: boolean;
  timings?: { lockMs: number; discoverMs: number; fenceMs: number; deleteMs: number; recordMs: number; functionMs: number };
}

/**
 * One step: a single `cleanup_step(...)` statement (sql/000005_step.sql) in autocommit, so the
 * locks, the deletes, the counters and the record commit together in one round trip.
 */
export async function runStep(sql: Sql, jobId: number, stepNo: number, options: StepOptions = {}): Promise<StepResult> {
  assertId('jobId', jobId);
  if (!Number.isSafeInteger(stepNo) || stepNo < 1 || stepNo > 2_147_483_647) throw new RangeError(`stepNo must be a positive integer: ${stepNo}`);
  const budget = options.rowBudget ?? STEP_ROW_BUDGET;
  if (!Number.isInteger(budget) || budget < 1 || budget > STEP_ROW_BUDGET) throw new RangeError(`rowBudget must be an integer in 1..${STEP_ROW_BUDGET}: ${budget}`);

  const started = performance.now();
  let call: StepCall;
  try {
    const [row] = await sql<{ r: StepCall }[]>`select cleanup_step(${jobId}, ${stepNo}, ${budget}, ${Math.max(budget, STEP_SCAN_WINDOW)}) as r`;
    call = row!.r;
  } catch (error) {
    throw translatePgError(error);
  }
  const totalMs = performance.now() - started;
  const result = toStepResult(call.step, call.replayed);
  if (!call.replayed && call.timings && options.onTimings) {
    const t = call.timings;
    options.onTimings({
      phase: result.phase,
      lockMs: t.lockMs,
      discoverMs: t.discoverMs,
      fenceMs: t.fenceMs,
      deleteMs: t.deleteMs,
      recordMs: t.recordMs,
      roundTripMs: Math.max(0, totalMs - t.functionMs),
      totalMs,
    });
  }
  return result;
}

/** Most steps one window runs (ADR-060, step windows). */
export const MAX_WINDOW_STEPS = 64;

export interface WindowOptions extends StepOptions {
  /** Steps per window, 1–64. */
  readonly maxSteps: number;
  /** The window stops starting steps after this many ms (checked between steps), 1–1000. */
  readonly maxMs: number;
}

/**
 * Up to `maxSteps` steps of one job from `firstStep`, in one statement and one transaction
 * (`cleanup_step_window`, sql/000007_step_window.sql): every step is `cleanup_step` with its
 * bound and checks, the window stops when the job finishes or after `maxMs`, and its steps
 * commit together (or, on any failure, none of them). A replayed window returns the recorded
 * results. The round trip and commit are paid once per window instead of once per step.
 */
export async function runStepWindow(sql: Sql, jobId: number, firstStep: number, options: WindowOptions): Promise<StepResult[]> {
  assertId('jobId', jobId);
  if (!Number.isSafeInteger(firstStep) || firstStep < 1 || firstStep > 2_147_483_647) throw new RangeError(`firstStep must be a positive integer: ${firstStep}`);
  const budget = options.rowBudget ?? STEP_ROW_BUDGET;
  if (!Number.isInteger(budget) || budget < 1 || budget > STEP_ROW_BUDGET) throw new RangeError(`rowBudget must be an integer in 1..${STEP_ROW_BUDGET}: ${budget}`);
  if (!Number.isInteger(options.maxSteps) || options.maxSteps < 1 || options.maxSteps > MAX_WINDOW_STEPS) throw new RangeError(`maxSteps must be an integer in 1..${MAX_WINDOW_STEPS}: ${options.maxSteps}`);
  if (!Number.isInteger(options.maxMs) || options.maxMs < 1 || options.maxMs > 1000) throw new RangeError(`maxMs must be an integer in 1..1000: ${options.maxMs}`);

  const started = performance.now();
  let call: { steps: StepCall[]; functionMs: number };
  try {
    const [row] = await sql<{ r: { steps: StepCall[]; functionMs: number } }[]>`
      select cleanup_step_window(${jobId}, ${firstStep}, ${options.maxSteps}, ${options.maxMs}, ${budget}, ${Math.max(budget, STEP_SCAN_WINDOW)}) as r`;
    call = row!.r;
  } catch (error) {
    throw translatePgError(error);
  }
  const totalMs = performance.now() - started;
  // The window's round trip and commit, shared out over the steps that did work.
  const worked = call.steps.filter((c) => !c.replayed && c.timings);
  const roundTripMs = Math.max(0, totalMs - call.functionMs) / Math.max(1, worked.length);
  return call.steps.map((c) => {
    const result = toStepResult(c.step, c.replayed);
    if (!c.replayed && c.timings && options.onTimings) {
      const t = c.timings;
      options.onTimings({ phase: result.phase, lockMs: t.lockMs, discoverMs: t.discoverMs, fenceMs: t.fenceMs, deleteMs: t.deleteMs, recordMs: t.recordMs, roundTripMs, totalMs: t.functionMs + roundTripMs });
    }
    return result;
  });
}
