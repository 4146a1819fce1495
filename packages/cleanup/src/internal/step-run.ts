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
