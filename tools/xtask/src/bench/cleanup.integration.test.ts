import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask bench cleanup (small)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('prunes in windows, measures the baseline on copies in alternating rounds and writes the result in the issue shape', async () => {
    const out = capture();
    const err = capture();
    expect(await runXtask(['bench', 'cleanup', '--rows', '2000', '--idle-ms', '100', '--active-ms', '100', '--busy-ms', '100', '--rounds', '2'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/cleanup.json'), 'utf8'));
    expect(Object.keys(result)).toEqual(expect.arrayContaining(['suite', 'command', 'rounds', 'machine', 'load', 'ratio', 'ratioSpread', 'ours', 'ceiling', 'writer', 'perRound']));
    expect(result).toMatchObject({ suite: 'cleanup', rounds: 2, rowsTable: 2000, unseen: 1000 });
    expect(result.perRound.map((r: { first: string }) => r.first)).toEqual(['ours', 'baseline']);
    expect(result.ours.counts).toMatchObject({ deleted: 1000, kept: 1000, moved: 0, alreadyAbsent: 0, retained: 0 });
    expect(result.ratio).toBeGreaterThan(0);
    expect(result.ratioSpread).toMatchObject({ n: 2, median: result.ratio });
    expect(result.machine.cores).toBeGreaterThan(0);
    expect(result.machine.postgres).toMatch(/^\d+/);
    expect(result.load.before).toHaveLength(3);
    expect(result.load.after).toHaveLength(3);
    expect(typeof result.load.busy).toBe('boolean');
    expect(result.writer.ours.attempts).toBeGreaterThan(0);
    expect(result.writer.ours).toHaveProperty('nowaitRate');
    expect(result.writer.idle.attempts).toBeGreaterThan(0);
    // The machine's floor: the writer sampled beside one busy backend, in every baseline round.
    expect(result.writer.busyCore.attempts).toBeGreaterThan(0);
    expect(result.writer.busyCoreP99VsIdle).toMatchObject({ n: 2 });
    for (const r of result.perRound) expect(r.busyWriterP99VsIdle).toBeGreaterThan(0);
    expect(Object.keys(result.ours.profile.phases)).toEqual(['lock', 'discover', 'fence', 'delete', 'record', 'roundTrip']);
    // WAL per deleted item, for each contender and round (net of the writer's idle rate, so only finite is certain at this size).
    expect(result.wal.oursBytesPerItem).toMatchObject({ n: 2 });
    expect(result.wal.ceilingBytesPerItem).toMatchObject({ n: 2 });
    for (const r of result.perRound) expect([r.oursWalBytesPerItem, r.ceilingWalBytesPerItem].every(Number.isFinite)).toBe(true);
    expect(out.text()).toContain('stepped prune');
    // Every round's samples of a kind together (ADR-079): the pooled p99 lies within the rounds' own.
    const pooled = result.writer.pooled;
    expect(pooled.samples.steps).toBeGreaterThan(0);
    expect(pooled.samples.idleGaps).toBeGreaterThan(0);
    const roundsP99 = result.perRound.map((r: { writerP99Ms: number }) => r.writerP99Ms);
    expect(pooled.oursP99Ms).toBeGreaterThanOrEqual(Math.min(...roundsP99));
    expect(pooled.oursP99Ms).toBeLessThanOrEqual(Math.max(...roundsP99));
    expect(pooled.p99VsIdle).toBeCloseTo(pooled.oursP99Ms / pooled.idleP99Ms, 2);
    expect(out.text()).toContain(`writer p99 vs idle, pooled over rounds: ${pooled.p99VsIdle} (target ≤ 1.5; median of rounds ${result.writer.p99VsIdle.median})`);
    // Two rounds build a template and four copies: well over the default 30 s on a loaded machine.
  }, 120_000);

  it('refuses nonsense options with usage', async () => {
    expect(await runXtask(['bench', 'cleanup', '--rows', '12'], { root, stdout: capture(), stderr: capture() })).toBe(2);
  });
});
