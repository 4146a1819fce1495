import { StoreAbortedError, StoreBudgetExceededError, StoreError, StoreRequestError } from '../errors.ts';

/** What an SDK error says, in the terms the store decides on. */
export interface SdkFailure {
  readonly status: number | undefined;
  readonly name: string | undefined;
  readonly attempts: number | undefined;
}

export function sdkFailure(error: unknown): SdkFailure {
  const e = error as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: number; attempts?: number } } | undefined;
  return {
    status: e?.$metadata?.httpStatusCode,
    name: typeof e?.name === 'string' ? (e.name === 'Error' && typeof e.code === 'string' ? e.code : e.name) : undefined,
    attempts: e?.$metadata?.attempts,
  };
}

export function isStatus(error: unknown, status: number): boolean {
  return sdkFailure(error).status === status;
}

/** The signals one operation runs under: its own budget, and the caller's/shutdown signals. */
export interface OperationSignals {
  readonly signal: AbortSignal;
  readonly budget: AbortSignal;
  readonly budgetMs: number;
}

/** Translate whatever an SDK call threw into one of the store's errors. */
export function toStoreError(error: unknown, operation: string, key: string | undefined, signals: OperationSignals): StoreError {
  if (error instanceof StoreError) return error;
  if (signals.signal.aborted) {
    return signals.budget.aborted
      ? new StoreBudgetExceededError(operation, key, signals.budgetMs, error)
      : new StoreAbortedError(operation, key, error);
  }
  const failure = sdkFailure(error);
  const code = failure.name ?? (error as { code?: string } | undefined)?.code;
  return new StoreRequestError(operation, key, { status: failure.status, s3Code: code, attempts: failure.attempts, cause: error });
}
