import { describe, expect, it } from 'vitest';
import { nextBatchSize } from './prune-table.ts';

describe('nextBatchSize', () => {
  it('sizes the next batch to the target, at most doubling or halving, within the bounds', () => {
    // 5,000 rows in 25 ms against a 50 ms target: twice as many next time.
    expect(nextBatchSize(5000, 25, 50, 5000, 50_000)).toBe(10_000);
    // Much faster still only doubles.
    expect(nextBatchSize(5000, 1, 50, 5000, 50_000)).toBe(10_000);
    // Close to the target: proportional.
    expect(nextBatchSize(10_000, 40, 50, 5000, 50_000)).toBe(12_500);
    // Over the target: smaller, at most by half, never below the floor.
    expect(nextBatchSize(20_000, 100, 50, 5000, 50_000)).toBe(10_000);
    expect(nextBatchSize(20_000, 1000, 50, 5000, 50_000)).toBe(10_000);
    expect(nextBatchSize(6000, 1000, 50, 5000, 50_000)).toBe(5000);
    // Never past the maximum.
    expect(nextBatchSize(40_000, 10, 50, 5000, 50_000)).toBe(50_000);
  });
});
