import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

interface PeerRun {
  eligible: number;
  pendingPastPeerAll: number;
  deleted: number;
  pendingLost: number;
  writer: { count: number; p99Ms: number; maxMs: number };
}

describe('pnpm xtask bench peers (small)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('cleans the same outbox three ways: ours and the loop delete exactly the published rows past the window, the library also every pending row past its 60 days', async () => {
    const out = capture();
    const err = capture();
    expect(await runXtask(['bench', 'peers', '--rows', '20000', '--rounds', '2', '--idle-seconds', '1'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/peers.json'), 'utf8'));
    expect(result).toMatchObject({ suite: 'peers', rounds: 2, rowsTable: 20000 });
    expect(result.perRound).toHaveLength(2);
    for (const round of result.perRound as Array<Record<'ours' | 'idInLoop' | 'pgTransactionalOutbox', PeerRun>>) {
      const { ours, idInLoop, pgTransactionalOutbox: theirs } = round;
      // The same rows in every table: 90 % of them published and past the 30-day window.
      expect(ours.eligible).toBeGreaterThanOrEqual(17_900);
      expect(idInLoop.eligible).toBe(ours.eligible);
      expect(theirs.eligible).toBe(ours.eligible);
      expect(ours.deleted).toBe(ours.eligible);
      expect(idInLoop.deleted).toBe(ours.eligible);
      expect(ours.pendingLost).toBe(0);
      expect(idInLoop.pendingLost).toBe(0);
      // The library's catch-all deletes every message older than 60 days, pending or not.
      expect(theirs.pendingPastPeerAll).toBeGreaterThan(800);
      expect(theirs.pendingLost).toBe(theirs.pendingPastPeerAll);
      expect(theirs.deleted).toBe(theirs.eligible + theirs.pendingPastPeerAll);
      // The raw samples stay out of the JSON; their counts and percentiles are there.
      expect(ours).not.toHaveProperty('samplesMs');
    }
    // The pooled p99 counts every round's samples, and lies within the rounds' own p99s (at most
    // 1 % of each round's samples is above its p99, so at most 1 % of all of them is above the largest).
    for (const c of ['ours', 'idInLoop', 'pgTransactionalOutbox'] as const) {
      const runs = result.perRound.map((r: Record<string, PeerRun>) => r[c]!) as PeerRun[];
      const pooled = result.contenders[c].pooled;
      expect(pooled.writerSamples).toBe(runs[0]!.writer.count + runs[1]!.writer.count);
      expect(pooled.writerP99Ms).toBeGreaterThanOrEqual(Math.min(...runs.map((r) => r.writer.p99Ms)) - 1e-9);
      expect(pooled.writerP99Ms).toBeLessThanOrEqual(Math.max(...runs.map((r) => r.writer.p99Ms)) + 1e-9);
    }
    expect(result.oursVs.idInLoop.writerP99Pooled).toBeCloseTo(result.contenders.ours.pooled.writerP99Ms / result.contenders.idInLoop.pooled.writerP99Ms, 2);
    // The verdict follows the figures it names.
    expect(result.verdict).toEqual({
      losesNoPendingRow: true,
      fasterThanTheLoop: result.oursVs.idInLoop.throughput.median > 1,
      gentlerOnTheWriterThanTheLoop: result.oursVs.idInLoop.writerP99Pooled < 1,
    });
    expect(out.text()).toMatch(/ours against the loop: loses no pending row; (faster|NOT faster); (a lower|NOT a lower) pooled writer p99/);
    expect(out.text()).toMatch(/writer p99 over every round's samples together \(pooled\): ours [\d.]+ ms of \d+/);
    expect(out.text()).toMatch(/ours \/ the id IN loop: throughput [\d.]+ \[[\d.]+–[\d.]+\], writer p99 [\d.]+ \[[\d.]+–[\d.]+\], pooled [\d.]+/);
  }, 180_000);

  it('refuses a row count that is not a positive integer, naming it', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'peers', '--rows', '-5'], { root, stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--rows');
  });
});
