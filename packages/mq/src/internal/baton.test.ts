import { describe, expect, it } from 'vitest';
import { Baton } from './baton.ts';

describe('Baton', () => {
  it('hands the turn on in the order it was asked for, only when released (twice is harmless)', async () => {
    const baton = new Baton();
    const order: string[] = [];
    const releases: Array<() => void> = [];
    const taker = (name: string) =>
      baton.take().then((release) => {
        order.push(name);
        releases.push(release);
      });
    const all = Promise.all([taker('a'), taker('b'), taker('c')]);
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['a']);
    releases[0]!();
    releases[0]!();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['a', 'b']);
    releases[1]!();
    await all;
    expect(order).toEqual(['a', 'b', 'c']);
  });
});
