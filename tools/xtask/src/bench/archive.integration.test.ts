import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask bench archive (small)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('archives every row through the engine in its own process beside the COPY→gzip→PUT ceiling, in alternating rounds', async () => {
    const out = capture();
    const err = capture();
    expect(await runXtask(['bench', 'archive', '--rows', '3000', '--rounds', '2'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/archive.json'), 'utf8'));
    expect(result).toMatchObject({ suite: 'archive', rounds: 2 });
    expect(result.ratioSpread).toMatchObject({ n: 2, median: result.ratio });
    expect(result.ratio).toBeGreaterThan(0);
    expect(result.ours.peakRssMb).toBeGreaterThan(0);
    // The engine process's own CPU, per round: it did the work, so it spent some.
    expect(result.ours.engineCpuMs).toMatchObject({ n: 2 });
    expect(result.ours.engineCpuMs.min).toBeGreaterThan(0);
    expect(result.perRound.map((r: { engineCpuMs: number }) => r.engineCpuMs)).toHaveLength(2);
    expect(result.load.before).toHaveLength(3);
    expect(out.text()).toContain('peak RSS');
  }, 120_000);
});
