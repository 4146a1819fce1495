import { AdmissionBusy, AdmissionClosed, CleanupError, JobNotFound, JobStateConflict, ProtocolRequired, SourceWriteRefused, TargetNotFound } from '../errors.ts';

interface PgLike {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
}

function detailOf(e: PgLike): Record<string, unknown> {
  if (typeof e.detail !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(e.detail);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const scopeOf = (d: Record<string, unknown>): 'server' | 'library' => (d.scope === 'server' ? 'server' : 'library');
const idOf = (d: Record<string, unknown>): number => Number(d.id ?? 0);

/**
 * The typed error for a PostgreSQL error raised by the admission triggers and guards (SQLSTATE
 * class CRA, sql/000003_admission.sql), by `cleanup_step` (CRJ, sql/000005_step.sql) or by a
 * `NOWAIT` gate lock / lock timeout (55P03); anything else is returned unchanged.
 */
export function translatePgError(error: unknown): unknown {
  if (error instanceof CleanupError || !error || typeof error !== 'object') return error;
  const e = error as PgLike;
  const message = typeof e.message === 'string' ? e.message : '';
  switch (e.code) {
    case 'CRA01': {
      const d = detailOf(e);
      return new AdmissionClosed(scopeOf(d), idOf(d), error);
    }
    case 'CRA02': {
      const d = detailOf(e);
      return new TargetNotFound(scopeOf(d), idOf(d), error);
    }
    case 'CRA03':
      return new SourceWriteRefused('parent_mismatch', message, detailOf(e), error);
    case 'CRA04':
      return new SourceWriteRefused('identity_immutable', message, detailOf(e), error);
    case 'CRA05':
      return new ProtocolRequired(message, detailOf(e), error);
    case 'CRJ01':
      return new JobNotFound(Number(detailOf(e).jobId ?? 0));
    case 'CRJ02': {
      const d = detailOf(e);
      const expected = typeof d.expectedStep === 'number' ? d.expectedStep : undefined;
      const text = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);
      return new JobStateConflict(Number(d.jobId ?? 0), text(d.state, 'unknown'), text(d.operation, 'step'), message.replace(/^job \d+ \([a-z]+\): /, ''), expected);
    }
    case '55P03': {
      const relation = /relation "([a-z_]+)"/.exec(message)?.[1];
      return new AdmissionBusy(relation, error);
    }
    default:
      return error;
  }
}
