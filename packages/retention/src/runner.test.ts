import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ArchiveRunner, firstArchiveCycleMs } from './runner.ts';

describe('ArchiveRunner', () => {
  it('refuses a cadence that is not a whole number of minutes, naming it', () => {
    const engine = { service: 'lab' } as ConstructorParameters<typeof ArchiveRunner>[0]['engine'];
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => new ArchiveRunner({ engine, everyMinutes: bad, registry: new Registry() })).toThrow(`everyMinutes must be a whole number ≥ 1: ${bad}`);
    }
  });

  it('runs the first timed cycle between the delay and twice it, at a deterministic phase per service', () => {
    const services = ['security', 'rules', 'exchange'];
    const first = services.map((s) => firstArchiveCycleMs(s, 300));
    expect(services.map((s) => firstArchiveCycleMs(s, 300))).toEqual(first);
    for (const ms of first) expect(ms >= 300_000 && ms < 600_000 && ms % 1000 === 0).toBe(true);
    expect(new Set(first).size).toBe(services.length);
    // The devstack's 20 s: all three archive in [20 s, 40 s) after start, pinned (FNV-1a).
    expect(Object.fromEntries(services.map((s) => [s, firstArchiveCycleMs(s, 20)]))).toEqual({ security: 27_000, rules: 24_000, exchange: 20_000 });
    expect(firstArchiveCycleMs('security', 0)).toBe(0);
    expect(() => firstArchiveCycleMs('security', -1)).toThrow(RangeError);
    expect(() => firstArchiveCycleMs('security', 1.5)).toThrow(RangeError);
  });
});
