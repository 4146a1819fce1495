import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

describe('pnpm xtask bench prune (small)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'craig-bench-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('prunes the same published rows as the single DELETE, in alternating rounds, with the writer p99 per round and pooled, and the scaling runs', async () => {
    const out = capture();
    const err = capture();
    expect(await runXtask(['bench', 'prune', '--rows', '20000', '--rounds', '2', '--scale', '20000,40000', '--scale-rounds', '1', '--idle-seconds', '1'], { root, stdout: out, stderr: err })).toBe(0);
    const result = JSON.parse(await readFile(join(root, 'bench/results/prune.json'), 'utf8'));
    expect(result).toMatchObject({ suite: 'prune', rounds: 2, rowsTable: 20000, walCompression: 'lz4' });
    expect(result.perRound.map((r: { round: number; first: string }) => [r.round, r.first])).toEqual([
      [1, 'ours'],
      [2, 'baseline'],
    ]);
    // The fixture: 90 % of the rows published before the window, 5 % pending among them, and
    // 5 % published within the last ten days (eligible only once the template is 20 days old).
    expect(result.deleted).toBeGreaterThanOrEqual(18_000);
    expect(result.deleted).toBeLessThanOrEqual(19_000);
    expect(result.ratioSpread).toMatchObject({ n: 2, median: result.ratio });
    // The writer's p99 pooled over both rounds lies within the rounds' own (ADR-079), and the
    // verdict's ratio is the pooled p99s'.
    const pooled = result.writer.pooled;
    expect(pooled.samples.ours).toBeGreaterThan(0);
    expect(pooled.samples.idle).toBeGreaterThan(0);
    const ours = result.perRound.map((r: { writerOursP99Ms: number }) => r.writerOursP99Ms);
    expect(pooled.oursP99Ms).toBeGreaterThanOrEqual(Math.min(...ours));
    expect(pooled.oursP99Ms).toBeLessThanOrEqual(Math.max(...ours));
    expect(pooled.oursP99VsIdle).toBeCloseTo(pooled.oursP99Ms / pooled.idleP99Ms, 2);
    expect(out.text()).toContain(`writer p99 ${pooled.oursP99VsIdle}x idle, pooled over rounds (target <= 2; median of rounds ${result.writer.oursP99VsIdle.median}x)`);
    // One scaling run per size, and the late-half flatness from them.
    expect(result.scaling.map((s: { rows: number; runs: number }) => [s.rows, s.runs])).toEqual([
      [20000, 1],
      [40000, 1],
    ]);
    expect(result.flatLateHalf).toBeGreaterThan(0);
  }, 180_000);

  it("prunes ADR-087's HOT outbox ceiling (no index on published_at) of exactly the rows the shipped one loses, and says it is no verdict", async () => {
    const out = capture();
    const err = capture();
    expect(await runXtask(['bench', 'prune', '--rows', '20000', '--rounds', '1', '--scale', '20000', '--scale-rounds', '1', '--idle-seconds', '1'], { root, stdout: capture(), stderr: capture() })).toBe(0);
    const shipped = JSON.parse(await readFile(join(root, 'bench/results/prune.json'), 'utf8'));
    expect(await runXtask(['bench', 'prune', '--outbox', 'hot-ceiling', '--rows', '20000', '--rounds', '1', '--scale', '20000', '--scale-rounds', '1', '--idle-seconds', '1'], { root, stdout: out, stderr: err })).toBe(0);
    const hot = JSON.parse(await readFile(join(root, 'bench/results/prune.json'), 'utf8'));
    expect(shipped.outbox).toBe('shipped');
    expect(hot.outbox).toBe('hot-ceiling');
    // The same fixture: the sweep over created_at, checking published_at in the heap, deletes
    // the very rows the partial prune index led it to (and the single DELETE, on each copy).
    expect(hot.deleted).toBe(shipped.deleted);
    expect(err.text()).toContain('outbox: hot-ceiling (ADR-087), not the shipped outbox');
  }, 180_000);

  it('refuses the noindex variant on the HOT outbox ceiling, which has no such index to drop', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'prune', '--outbox', 'hot-ceiling', '--variants', 'noindex'], { root, stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--variants noindex drops the shipped prune index, which --outbox hot-ceiling has not got');
  });

  it('refuses a scale that repeats a size, naming it', async () => {
    const err = capture();
    expect(await runXtask(['bench', 'prune', '--scale', '1000,1000'], { root, stdout: capture(), stderr: err })).toBe(2);
    expect(err.text()).toContain('--scale must not repeat a size: 1000,1000');
  });
});
