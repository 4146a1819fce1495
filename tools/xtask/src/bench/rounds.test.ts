import { describe, expect, it } from 'vitest';
import { alternate, quantile, rotate, scalingRounds, spread } from './rounds.ts';

describe('bench rounds', () => {
  it('median and interquartile range by linear interpolation', () => {
    expect(spread([0.5, 0.9, 0.7, 0.6, 0.8])).toEqual({ median: 0.7, q1: 0.6, q3: 0.8, iqr: 0.2, min: 0.5, max: 0.9, n: 5 });
    expect(spread([1, 2, 3, 4])).toMatchObject({ median: 2.5, q1: 1.75, q3: 3.25 });
    expect(quantile([], 0.5)).toBe(0);
    expect(spread([3])).toMatchObject({ median: 3, iqr: 0 });
  });

  it('alternates which contender goes first, round by round', async () => {
    const order: string[] = [];
    const rounds = await alternate(4, { ours: async (r) => void order.push(`o${r}`), baseline: async (r) => void order.push(`b${r}`) });
    expect(order).toEqual(['o1', 'b1', 'b2', 'o2', 'o3', 'b3', 'b4', 'o4']);
    expect(rounds.map((r) => r.first)).toEqual(['ours', 'baseline', 'ours', 'baseline']);
  });

  it('rotates several contenders so each goes first in turn', async () => {
    const order: string[] = [];
    const run = (name: string) => async () => void order.push(name);
    const rounds = await rotate(3, [['a', run('a')], ['b', run('b')], ['c', run('c')]] as const);
    expect(order).toEqual(['a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b']);
    expect(rounds.map((r) => r.order[0])).toEqual(['a', 'b', 'c']);
  });

  it('runs every scaling size each round, reversing the order every other round', async () => {
    const order: number[] = [];
    let calls = 0;
    const rounds = await scalingRounds([1, 4], 3, async (n) => {
      order.push(n);
      return n * 100 + calls++;
    }, () => {});
    expect(order).toEqual([1, 4, 4, 1, 1, 4]);
    // Each round's results by size, whichever ran first.
    expect(rounds.map((r) => [r.get(1), r.get(4)])).toEqual([[100, 401], [103, 402], [104, 405]]);
  });
});
