import { describe, expect, it } from 'vitest';
import { statsIn, TimedProbe } from './timed-probe.ts';

describe('TimedProbe', () => {
  it('splits one continuous writer into windows by start time, counting failures per window', async () => {
    let n = 0;
    const probe = new TimedProbe(
      async () => {
        if (++n % 4 === 0) throw Object.assign(new Error('busy'), { code: '55P03' });
        await new Promise((r) => setTimeout(r, 1));
      },
      { classify: (e) => ((e as { code: string }).code === '55P03' ? 'nowait' : 'error') },
    );
    probe.start();
    await new Promise((r) => setTimeout(r, 60));
    await probe.stop();
    const all = statsIn(probe.samples, [[0, Number.POSITIVE_INFINITY]]);
    expect(all.attempts).toBe(n);
    expect(all.nowaitRejections).toBe(Math.floor(n / 4));
    expect(all.count).toBe(n - Math.floor(n / 4));
    const mid = probe.samples[Math.floor(probe.samples.length / 2)]!.at;
    const before = statsIn(probe.samples, [[0, mid]]);
    const after = statsIn(probe.samples, [[mid, Number.POSITIVE_INFINITY]]);
    expect(before.attempts + after.attempts).toBe(n);
    expect(statsIn(probe.samples, [])).toMatchObject({ attempts: 0, count: 0, nowaitRate: 0 });
  });
});
