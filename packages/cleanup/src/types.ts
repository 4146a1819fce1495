/** What a job cleans up. */
export type JobKind = 'prune-library' | 'remove-library' | 'remove-server';
export const JOB_KINDS: readonly JobKind[] = ['prune-library', 'remove-library', 'remove-server'];

/** `collecting` (prune jobs only) → `deleting` → `completed`; only `collecting` can be `cancelled`. */
export type JobState = 'collecting' | 'deleting' | 'completed' | 'cancelled';

/** Where a deleting job is: `items` ⇄ `verify` → (`library` | `libraries` → `server`) → `done`. */
export type JobPhase = 'collect' | 'items' | 'verify' | 'library' | 'libraries' | 'server' | 'done';

/** Row outcomes, counted separately. A job's counts are sums over its steps (and passes). */
export interface RowCounts {
  /** Candidates (unseen rows) a step compared: at most 128 per step. */
  readonly visited: number;
  /** Rows the walk passed that are in the manifest: kept. */
  readonly kept: number;
  readonly deleted: number;
  /** Candidates that left the scope for an open library before they were deleted. */
  readonly moved: number;
  /** Candidates already gone when the step came to delete them. */
  readonly alreadyAbsent: number;
  /** Candidates whose revision (`xmin`) changed since discovery: kept for another pass. */
  readonly retained: number;
  readonly librariesRemoved: number;
  readonly serversRemoved: number;
}

export interface JobStatus {
  readonly id: number;
  readonly serverId: number;
  readonly libraryId: number | null;
  readonly kind: JobKind;
  readonly state: JobState;
  readonly phase: JobPhase;
  readonly cancelReason: 'requested' | 'deadline' | null;
  /** Unique ids appended so far (the manifest's size). */
  readonly manifestCount: number;
  readonly expectedUniqueCount: number | null;
  /** max(items.id) when admission closed; nothing in scope has a larger id. */
  readonly highWaterId: number | null;
  readonly pass: number;
  readonly stepsDone: number;
  /** The step number `step` expects next. */
  readonly nextStep: number;
  readonly cursor: { readonly libraryId: number | null; readonly itemId: number };
  readonly counts: RowCounts;
  readonly createdAt: Date;
  readonly collectDeadlineAt: Date | null;
  readonly sealedAt: Date | null;
  readonly finishedAt: Date | null;
}

export interface StepResult {
  readonly jobId: number;
  readonly stepNo: number;
  /** The phase this step worked in. */
  readonly phase: JobPhase;
  readonly pass: number;
  readonly libraryId: number | null;
  readonly counts: RowCounts;
  readonly cursorItemId: number;
  /** The job's state and phase after this step. */
  readonly stateAfter: JobState;
  readonly phaseAfter: JobPhase;
  /** The job finished with this step. */
  readonly done: boolean;
  /** This step had already completed: its recorded result, nothing was deleted now. */
  readonly replayed: boolean;
}
