import { latencyStats, percentile, type LatencyStats } from './measure.ts';

/** One operation of a probe: when it started (performance.now()), how long it took, or how it failed. */
export interface TimedSample {
  readonly at: number;
  readonly ms: number;
  readonly failure?: string;
}

/**
 * Like `LatencyProbe`, but every sample keeps its start time, so one continuous writer can be
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

export type WindowStats = LatencyStats & { readonly p95Ms: number; readonly attempts: number; readonly failures: Record<string, number>; readonly nowaitRejections: number; readonly nowaitRate: number };

/** Latency of the successful samples that started inside any of `windows` ([from, to) pairs), and the failures among them. */
export function statsIn(samples: readonly TimedSample[], windows: ReadonlyArray<readonly [number, number]>): WindowStats {
  const inside = samples.filter((s) => windows.some(([from, to]) => s.at >= from && s.at < to));
  const failures: Record<string, number> = {};
  for (const s of inside) if (s.failure) failures[s.failure] = (failures[s.failure] ?? 0) + 1;
  const nowait = failures.nowait ?? 0;
  const ok = inside.filter((s) => !s.failure).map((s) => s.ms);
  return {
    ...latencyStats(ok),
    p95Ms: Math.round(percentile([...ok].sort((a, b) => a - b), 95) * 1000) / 1000,
    attempts: inside.length,
    failures,
    nowaitRejections: nowait,
    nowaitRate: inside.length === 0 ? 0 : Math.round((nowait / inside.length) * 10_000) / 10_000,
  };
}
