import { defineArchiveSpec, fixpoints, type ArchiveSpec } from '@craig/retention';

/**
 * Months after its `as_of` date during which a completed screening run may still be
 * invalidated (the fork-2 freshness rule). Past it the run is quiescent: at its archive
 * fixpoint, and the invalidation writer refuses it. The one place the number lives: the
 * fixpoint binds it as a parameter, and the writer's refusal is built from the same spec.
 */
export const SCREENING_FRESHNESS_MONTHS = 12;

/** The name of the writer-side refusal that protects `ssa_screening_runs.invalidated_at`. */
export const INVALIDATE_REFUSAL = 'ssa_screening_runs.invalidate: fork-2 freshness no-op (notAtFixpoint in the UPDATE WHERE)';

/** `ssa_transport_handoffs`: insert-only, no dependents. Archived first. */
export const HANDOFFS_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'ssa_transport_handoffs',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.insertOnly(),
});

/**
 * `ssa_screening_members`: at its fixpoint once terminal (matched, cleared, error; CHECK-paired
 * with completed_at, and the worker's only update requires `pending`). Guarded by its
 * handoffs: a member goes only after its handoff did.
 */
export const MEMBERS_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'ssa_screening_members',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.terminalStatus('status', ['matched', 'cleared', 'error']),
  guards: [{ table: 'ssa_transport_handoffs', column: 'member_id' }],
  mutableColumns: [{ column: 'status', protectedBy: 'fixpoint' }],
});

/**
 * `ssa_screening_runs`: at its fixpoint once completed AND its `as_of` is past the
 * SCREENING_FRESHNESS_MONTHS horizon. `invalidated_at` may still stamp a completed run inside
 * the horizon; the fixpoint does not read it, so it is protected solely by the writer-side
 * refusal {@link INVALIDATE_REFUSAL}. Guarded by its members. Archived last.
 */
export const RUNS_SPEC: ArchiveSpec = defineArchiveSpec({
  table: 'ssa_screening_runs',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.terminalQuiescent('status', ['completed'], { since: 'as_of', months: SCREENING_FRESHNESS_MONTHS }),
  guards: [{ table: 'ssa_screening_members', column: 'run_id' }],
  mutableColumns: [
    { column: 'status', protectedBy: 'fixpoint' },
    { column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: INVALIDATE_REFUSAL },
  ],
});

/**
 * The specs in FK deletion order, dependents first: handoffs → members → runs. Bookkeeping is
 * ledger-only: the engine gets no `onBatchArchived` hook, so no fleet event announces an
 * exchange archive (nothing downstream consumes SSA archival facts; seed 003).
 */
export const EXCHANGE_ARCHIVE_SPECS: readonly ArchiveSpec[] = Object.freeze([HANDOFFS_SPEC, MEMBERS_SPEC, RUNS_SPEC]);
