import { describe, expect, it } from 'vitest';
import { runEvery } from './every.ts';

describe('runEvery', () => {
  it('runs after the first delay, then on its interval; a throwing cycle is reported and the loop goes on; abort stops it', async () => {
    const stop = new AbortController();
    const starts: number[] = [];
    const errors: unknown[] = [];
    const t0 = Date.now();
    const loop = runEvery(
      stop.signal,
      { firstMs: 30, everyMs: 20 },
      async () => {
        starts.push(Date.now() - t0);
        if (starts.length === 2) throw new Error('second cycle fails');
        if (starts.length === 4) stop.abort();
      },
      (error) => errors.push(error),
    );
    await loop;
    expect(starts).toHaveLength(4);
    expect(starts[0]).toBeGreaterThanOrEqual(29);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(19);
    expect(errors.map((e) => (e as Error).message)).toEqual(['second cycle fails']);
  });

  it('an aborted signal ends it before the first cycle', async () => {
    const stop = new AbortController();
    stop.abort();
    let cycles = 0;
    await runEvery(stop.signal, { firstMs: 10_000, everyMs: 10_000 }, async () => void cycles++, () => undefined);
    expect(cycles).toBe(0);
  });
});
