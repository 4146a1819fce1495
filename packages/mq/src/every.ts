import { sleep } from './internal/sleep.ts';

/**
 * A timer loop: `cycle` first after `firstMs`, then `everyMs` after the start of the previous
 * cycle (a slow cycle shortens the wait, never overlaps the next), until `signal` aborts. A
 * cycle that throws goes to `onError` and the loop goes on: the next cycle is the retry.
 * What the service-local sweeps and the archive runner run on.
 */
export async function runEvery(
  signal: AbortSignal,
  timing: { readonly firstMs: number; readonly everyMs: number },
  cycle: () => Promise<unknown>,
  onError: (error: unknown) => void,
): Promise<void> {
  await sleep(timing.firstMs, signal);
  while (!signal.aborted) {
    const started = Date.now();
    try {
      await cycle();
    } catch (error) {
      onError(error);
    }
    await sleep(Math.max(0, timing.everyMs - (Date.now() - started)), signal);
  }
}
