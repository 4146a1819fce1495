import { describe, expect, it } from 'vitest';
import { latencyStats, percentile, rate, ratio, sampleStats, TimedProbe } from './measure.ts';

describe('bench measurements', () => {
  it('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([], 99)).toBe(0);
    expect(latencyStats([3, 1, 2])).toEqual({ count: 3, p50Ms: 2, p99Ms: 3, maxMs: 3, meanMs: 2 });
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
