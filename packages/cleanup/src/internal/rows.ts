import type { JobKind, JobPhase, JobState, JobStatus, RowCounts, StepResult } from '../types.ts';

/** A cleanup_jobs row as postgres.js returns it (int8 as string). */
export interface JobRow {
  id: string;
  server_id: number;
  library_id: string | null;
  kind: JobKind;
  state: JobState;
  phase: JobPhase;
  cancel_reason: 'requested' | 'deadline' | null;
  expected_unique_count: number | null;
  high_water_id: string | null;
  pass: number;
  cursor_library_id: string | null;
  cursor_item_id: string;
  steps_done: number;
  visited: string;
  kept: string;
  deleted: string;
  moved: string;
  already_absent: string;
  retained: string;
  libraries_removed: number;
  servers_removed: number;
  created_at: Date;
  collect_deadline_at: Date | null;
  sealed_at: Date | null;
  finished_at: Date | null;
  /** collect_deadline_at <= now(), computed by the database. */
  expired?: boolean;
  manifest_count?: number;
}

export interface StepRow {
  job_id: string;
  step_no: number;
  phase: JobPhase;
  pass: number;
  library_id: string | null;
  visited: number;
  kept: number;
  deleted: number;
  moved: number;
  already_absent: number;
  retained: number;
  libraries_removed: number;
  servers_removed: number;
  cursor_item_id: string;
  state_after: JobState;
  phase_after: JobPhase;
}

const num = (v: string | number): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: string | number | null): number | null => (v === null ? null : num(v));

export function toStatus(row: JobRow): JobStatus {
  return {
    id: num(row.id),
    serverId: row.server_id,
    libraryId: numOrNull(row.library_id),
    kind: row.kind,
    state: row.state,
    phase: row.phase,
    cancelReason: row.cancel_reason,
    manifestCount: row.manifest_count ?? 0,
    expectedUniqueCount: row.expected_unique_count,
    highWaterId: numOrNull(row.high_water_id),
    pass: row.pass,
    stepsDone: row.steps_done,
    nextStep: row.steps_done + 1,
    cursor: { libraryId: numOrNull(row.cursor_library_id), itemId: num(row.cursor_item_id) },
    counts: {
      visited: num(row.visited),
      kept: num(row.kept),
      deleted: num(row.deleted),
      moved: num(row.moved),
      alreadyAbsent: num(row.already_absent),
      retained: num(row.retained),
      librariesRemoved: row.libraries_removed,
      serversRemoved: row.servers_removed,
    },
    createdAt: row.created_at,
    collectDeadlineAt: row.collect_deadline_at,
    sealedAt: row.sealed_at,
    finishedAt: row.finished_at,
  };
}

export function toStepResult(row: StepRow, replayed: boolean): StepResult {
  return {
    jobId: num(row.job_id),
    stepNo: row.step_no,
    phase: row.phase,
    pass: row.pass,
    libraryId: numOrNull(row.library_id),
    counts: {
      visited: row.visited,
      kept: row.kept,
      deleted: row.deleted,
      moved: row.moved,
      alreadyAbsent: row.already_absent,
      retained: row.retained,
      librariesRemoved: row.libraries_removed,
      serversRemoved: row.servers_removed,
    },
    cursorItemId: num(row.cursor_item_id),
    stateAfter: row.state_after,
    phaseAfter: row.phase_after,
    done: row.state_after === 'completed',
    replayed,
  };
}

export const ZERO_COUNTS: RowCounts = Object.freeze({
  visited: 0,
  kept: 0,
  deleted: 0,
  moved: 0,
  alreadyAbsent: 0,
  retained: 0,
  librariesRemoved: 0,
  serversRemoved: 0,
});
