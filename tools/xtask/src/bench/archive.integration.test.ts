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
    // 1 MiB objects: after the first batch's 5,000 rows, ~2,000 (of ~500 bytes) per object, so
    // 9,000 rows take at least three objects where the default 8 MiB would take two.
    expect(await runXtask(['bench', 'archive', '--rows', '9000', '--rounds', '2', '--object-mib', '1'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/archive.json'), 'utf8'));
    expect(result).toMatchObject({ suite: 'archive', rounds: 2 });
    expect(result.ratioSpread).toMatchObject({ n: 2, median: result.ratio });
    expect(result.ratio).toBeGreaterThan(0);
    expect(result.ours.peakRssMb).toBeGreaterThan(0);
    // The engine process's own CPU, per round: it did the work, so it spent some.
    expect(result.ours.engineCpuMs).toMatchObject({ n: 2 });
    expect(result.ours.engineCpuMs.min).toBeGreaterThan(0);
    expect(result.perRound.map((r: { engineCpuMs: number }) => r.engineCpuMs)).toHaveLength(2);
    expect(result.ours.objects).toBeGreaterThanOrEqual(3);
    // Where the CPU went, per round: the machine was busy at least as long as the engine's main
    // thread, and the ceiling's session (connected inside the measurement) did the COPY and DELETE.
    for (const r of result.perRound as { cpuMs: { ours: Record<string, number>; ceiling: Record<string, number> } }[]) {
      expect(r.cpuMs.ours.machine).toBeGreaterThanOrEqual(r.cpuMs.ours.engineMain!);
      expect(r.cpuMs.ours.engine).toBeGreaterThanOrEqual(r.cpuMs.ours.engineMain!);
      expect(r.cpuMs.ours.readSession).toBeGreaterThanOrEqual(0);
      expect(r.cpuMs.ours.writeSessions).toBeGreaterThanOrEqual(0);
      expect(r.cpuMs.ceiling.session).toBeGreaterThanOrEqual(0);
      expect(r.cpuMs.ceiling.machine).toBeGreaterThan(0);
    }
    expect(result.cpuMs.ours.machine).toMatchObject({ n: 2 });
    expect(out.text()).toContain('CPU over the run');
    expect(result.load.before).toHaveLength(3);
    expect(out.text()).toContain('peak RSS');
  }, 120_000);
});
