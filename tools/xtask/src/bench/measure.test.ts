import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { latencyStats, percentile, pooledP99, rate, ratio, sampleStats, TimedProbe } from './measure.ts';

describe('bench measurements', () => {
  it('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([], 99)).toBe(0);
    expect(latencyStats([3, 1, 2])).toEqual({ count: 3, p50Ms: 2, p99Ms: 3, maxMs: 3, meanMs: 2 });
  });

  it("a p99 pooled over runs lies between the runs' own p99s (ADR-079)", () => {
    const latency = fc.double({ min: 0, max: 1000, noNaN: true });
    fc.assert(
      fc.property(fc.array(fc.array(latency, { minLength: 1, maxLength: 700 }), { minLength: 1, maxLength: 6 }), (runs) => {
        const each = runs.map((r) => latencyStats(r).p99Ms);
        const pooled = pooledP99(runs);
        expect(pooled).toBeGreaterThanOrEqual(Math.min(...each));
        expect(pooled).toBeLessThanOrEqual(Math.max(...each));
      }),
      { numRuns: 300 },
    );
    // Two runs of different length: the pooled p99 is the 396th of all 400 samples, the long
    // run's fifth slowest.
    const short = Array.from({ length: 100 }, (_, i) => i + 1);
    const long = Array.from({ length: 300 }, (_, i) => i + 0.5);
    expect(pooledP99([short, long])).toBe(percentile([...short, ...long].sort((a, b) => a - b), 99));
    expect(pooledP99([short, long])).toBe(295.5);
  });

  it('rates and ratios', () => {
    expect(rate(5000, 250)).toBe(20000);
    expect(ratio(230_000, 350_000)).toBe(0.657);
  });

  it('the probe times successes and counts failures by kind', async () => {
    let n = 0;
    const probe = new TimedProbe(
      async () => {
        n++;
        if (n % 3 === 0) throw Object.assign(new Error('busy'), { code: '55P03' });
        await new Promise((r) => setTimeout(r, 2));
      },
      { classify: (e) => (e as { code: string }).code },
    );
    probe.start();
    await new Promise((r) => setTimeout(r, 60));
    await probe.stop();
    const stats = sampleStats(probe.samples);
    expect(stats.attempts).toBe(n);
    expect(stats.failures['55P03']).toBe(Math.floor(n / 3));
    expect(stats.count).toBe(n - Math.floor(n / 3));
    expect(stats.p50Ms).toBeGreaterThanOrEqual(1.5);
  });
});
