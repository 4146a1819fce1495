import { latencyStats, percentile, type LatencyStats, type TimedSample } from './measure.ts';

export { TimedProbe, type TimedSample } from './measure.ts';

export type WindowStats = LatencyStats & { readonly p95Ms: number; readonly attempts: number; readonly failures: Record<string, number>; readonly nowaitRejections: number; readonly nowaitRate: number };

/** The latencies (ms) of the successful samples that started inside any of `windows`, in order: for a p99 pooled over rounds. */
export function latenciesIn(samples: readonly TimedSample[], windows: ReadonlyArray<readonly [number, number]>): number[] {
  return samples.filter((s) => !s.failure && windows.some(([from, to]) => s.at >= from && s.at < to)).map((s) => s.ms);
}

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
