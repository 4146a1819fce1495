// Waiting on the outside world with a deadline, and naming what was waited for when it runs out.

/** A scenario's wait ran out: `what` names the condition (it becomes the failed check). */
export class FaultTimeoutError extends Error {
  override readonly name = 'FaultTimeoutError';
  readonly code = 'fault_timeout';
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly last?: unknown,
  ) {
    super(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${last === undefined ? '' : ` (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`}`);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Poll `check` until it returns something truthy (returned) or `timeoutMs` passes (a
 * `FaultTimeoutError` naming `what`). A check that throws counts as not yet.
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (performance.now() > deadline) throw new FaultTimeoutError(what, timeoutMs, last);
    await sleep(options.intervalMs ?? 100);
  }
}
