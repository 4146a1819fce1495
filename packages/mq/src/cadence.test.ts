import { describe, expect, it } from 'vitest';
import { POLL_INTERVAL_MS, PRUNE_EVERY_TICKS, pruneJitter } from './cadence.ts';

describe('prune cadence', () => {
  it('PRUNE_EVERY_TICKS ticks of POLL_INTERVAL_MS is exactly one hour', () => {
    expect(PRUNE_EVERY_TICKS * POLL_INTERVAL_MS).toBe(60 * 60 * 1000);
  });

  it('the jitter is deterministic per service, in range, and spreads the fleet', () => {
    const services = ['cases', 'placements', 'safety', 'security', 'rules', 'exchange', 'financial', 'inventory'];
    const phases = services.map((s) => pruneJitter(s));
    expect(services.map((s) => pruneJitter(s))).toEqual(phases);
    for (const p of phases) expect(Number.isInteger(p) && p >= 0 && p < PRUNE_EVERY_TICKS).toBe(true);
    expect(new Set(phases).size).toBe(services.length);
    // FNV-1a, pinned: a change here moves every service's prune minute.
    expect(Object.fromEntries(services.map((s, i) => [s, phases[i]]))).toEqual({
      cases: 3206,
      placements: 2521,
      safety: 2247,
      security: 843,
      rules: 1344,
      exchange: 3328,
      financial: 3516,
      inventory: 2879,
    });
    expect(pruneJitter('cases', 10)).toBeLessThan(10);
    expect(() => pruneJitter('cases', 0)).toThrow(RangeError);
  });
});
