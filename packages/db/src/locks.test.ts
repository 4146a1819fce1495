import { describe, expect, it } from 'vitest';
import { assertDistinctLockKeys, LOCK_KEYS } from './locks.ts';

describe('advisory lock registry', () => {
  it('has no twin: every name has its own key', () => {
    const values = Object.values(LOCK_KEYS);
    expect(new Set(values).size).toBe(values.length);
    expect(() => assertDistinctLockKeys()).not.toThrow();
  });

  it('detects a twin', () => {
    expect(() => assertDistinctLockKeys({ a: 1n, b: 2n, c: 1n })).toThrow(/a and c are both 1/);
  });

  it('names every lock the platform takes, as signed 64-bit keys', () => {
    expect(Object.keys(LOCK_KEYS)).toEqual(
      expect.arrayContaining(['migrator', 'transportPrune', 'archiveLease', 'cleanupCoordinator', 'busPrune', 'exchangeSendJobSweep', 'financialReconcileSweep', 'cleanupHistorySweep']),
    );
    for (const key of Object.values(LOCK_KEYS)) {
      expect(key).toBeGreaterThan(0n);
      expect(key).toBeLessThan(2n ** 63n);
    }
  });
});
