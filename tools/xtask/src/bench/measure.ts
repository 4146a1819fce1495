import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';

export interface LatencyStats {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

/** Nearest-rank percentile of already sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function latencyStats(samplesMs: readonly number[]): LatencyStats {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    count: sorted.length,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted.at(-1) ?? 0),
    meanMs: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)),
  };
}

/**
 * The nearest-rank p99 of several runs' latencies taken together. A p99 of a few hundred samples
 * is decided by its few slowest; over every round of a suite it rests on several times as many,
 * and two contenders that ran for different times each count all of theirs (ADR-079).
 */
export function pooledP99(runs: ReadonlyArray<readonly number[]>): number {
  return latencyStats(runs.flat()).p99Ms;
}

/** One operation of a probe: when it started (performance.now()), how long it took, or how it failed. */
export interface TimedSample {
  readonly at: number;
  readonly ms: number;
  readonly failure?: string;
}

/**
 * Runs `op` back to back (with `pauseMs` between calls) until stopped; every sample keeps its start time, so one continuous writer can be
 * split into the windows it ran in (steps running / not running). On a shared, noisy machine
 * that compares like with like: both sides see the same background load, interleaved in time.
 */
export class TimedProbe {
  readonly samples: TimedSample[] = [];
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly op: () => Promise<unknown>,
    private readonly options: { pauseMs?: number; classify?: (error: unknown) => string } = {},
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const at = performance.now();
        try {
          await this.op();
          this.samples.push({ at, ms: performance.now() - at });
        } catch (error) {
          this.samples.push({ at, ms: performance.now() - at, failure: this.options.classify?.(error) ?? 'error' });
        }
        if (this.options.pauseMs) await new Promise((r) => setTimeout(r, this.options.pauseMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

/** Latency of the successful samples, and the failures by kind (what the probe's `classify` returned). */
export function sampleStats(samples: readonly TimedSample[]): LatencyStats & { failures: Record<string, number>; attempts: number } {
  const failures: Record<string, number> = {};
  const ok: number[] = [];
  for (const s of samples) {
    if (s.failure) failures[s.failure] = (failures[s.failure] ?? 0) + 1;
    else ok.push(s.ms);
  }
  return { ...latencyStats(ok), failures, attempts: samples.length };
}

/** Write `bench/results/<suite>.json` and return its path. */
export async function writeResult(root: string, suite: string, result: unknown): Promise<string> {
  const dir = join(root, 'bench/results');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${suite}.json`);
  await writeFile(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

/** A plain aligned table. */
export function printTable(out: Writable, headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): void {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  out.write(`${line(cells[0]!)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  for (const r of cells.slice(1)) out.write(`${line(r)}\n`);
}

/** Rows per second, rounded. */
export const rate = (rows: number, ms: number): number => Math.round((rows / Math.max(ms, 1e-6)) * 1000);

/** A ratio with three significant decimals. */
export const ratio = (ours: number, ceiling: number): number => Math.round((ours / Math.max(ceiling, 1e-9)) * 1000) / 1000;
