import { MQ_MIGRATIONS } from '@craig/mq';
import { migrationTemplate } from '@craig/db';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWriter } from './writer.ts';

describe('the benchmarks\' writer process', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ template: migrationTemplate([MQ_MIGRATIONS]), prefix: 'craig_bench_writer' });
  });
  afterAll(() => db?.drop());

  it('writes until stopped, and its samples come back on this process\'s clock', async () => {
    const spawned = performance.now();
    const writer = await startWriter({ kind: 'outbox', url: db.url });
    const ready = performance.now();
    await new Promise((r) => setTimeout(r, 400));
    const to = performance.now();
    const samples = await writer.stop();
    const [{ n } = { n: 0 }] = await db.sql<{ n: number }[]>`select count(*)::int as n from event_outbox where aggregate_id = 'w'`;
    // The warm-up second wrote rows too, but its samples were dropped.
    expect(samples.length).toBeGreaterThan(10);
    expect(samples.every((s) => !s.failure)).toBe(true);
    expect(n).toBeGreaterThan(samples.length);
    // On this process's clock: none from the warm-up second after the spawn, the first one
    // begun by the time `ready` arrived here (a pipe's delay and a 5 ms pause of slack), none
    // after stdin closed. Left on the child's clock (or absolute), they would fall outside.
    const starts = samples.map((s) => s.at);
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(spawned + 1000 - 1);
    expect(Math.min(...starts)).toBeLessThanOrEqual(ready + 100);
    expect(Math.max(...starts)).toBeLessThanOrEqual(to + 50);
  });

  it('fails loudly when it cannot connect', async () => {
    await expect(startWriter({ kind: 'outbox', url: 'postgres://postgres@127.0.0.1:5432/craig_no_such_database' })).rejects.toThrow(/exited .* before it was ready/);
  });
});
