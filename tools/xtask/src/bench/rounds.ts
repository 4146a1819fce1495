// Rounds, spreads and the machine a suite ran on: what makes a figure from a shared, noisy
// machine trustworthy enough to compare. Every suite runs its contenders in alternating rounds
// (ours, baseline; then baseline, ours; …), reports the median of the per-round ratios with
// their interquartile range, and records the machine and its load before, during and after.
import { cpus, loadavg, totalmem } from 'node:os';
import { createClient, WAL_COMPRESSION_METHODS, walCompressionOf, type WalCompressionMethod } from '@craig/db';
import { postgres } from '@craig/testkit';
import { UsageError } from '../command.ts';

/** Rounds every suite runs by default (issue 12: at least five). */
export const DEFAULT_ROUNDS = 5;
/**
 * The 1-minute load average at or above which the machine counts as busy before a run. A
 * result taken on a busy machine is not committed (bench/README.md).
 */
export const BUSY_LOAD = 1.5;
/** A suite should finish within this at its defaults; past it the run says so. */
export const WALL_BUDGET_SECONDS = 600;

/** The spread of one figure over rounds: median and quartiles (linear interpolation), min and max. */
export interface Spread {
  readonly median: number;
  readonly q1: number;
  readonly q3: number;
  readonly iqr: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Quantile `q` (0…1) of sorted values, linearly interpolated between ranks (R's type 7). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const q1 = quantile(sorted, 0.25);
  const q3 = quantile(sorted, 0.75);
  return {
    median: round3(quantile(sorted, 0.5)),
    q1: round3(q1),
    q3: round3(q3),
    iqr: round3(q3 - q1),
    min: round3(sorted[0] ?? 0),
    max: round3(sorted.at(-1) ?? 0),
    n: sorted.length,
  };
}

/** The median of values (interpolated for an even count). */
export const median = (values: readonly number[]): number => spread(values).median;

export interface AlternatingRound<O, B> {
  readonly round: number;
  readonly first: 'ours' | 'baseline';
  readonly ours: O;
  readonly baseline: B;
}

/**
 * Run `rounds` rounds of both contenders, alternating which goes first (round 1 ours first,
 * round 2 the baseline first, …), so a trend in the machine's background load (a test suite
 * starting next door) hits both sides alike. `onRound` sees each finished round (progress).
 */
export async function alternate<O, B>(
  rounds: number,
  contenders: { readonly ours: (round: number) => Promise<O>; readonly baseline: (round: number) => Promise<B> },
  onRound?: (round: AlternatingRound<O, B>) => void,
): Promise<Array<AlternatingRound<O, B>>> {
  const out: Array<AlternatingRound<O, B>> = [];
  for (let round = 1; round <= rounds; round++) {
    let ours: O;
    let baseline: B;
    const first = round % 2 === 1 ? 'ours' : 'baseline';
    if (first === 'ours') {
      ours = await contenders.ours(round);
      baseline = await contenders.baseline(round);
    } else {
      baseline = await contenders.baseline(round);
      ours = await contenders.ours(round);
    }
    const r = { round, first, ours, baseline } as const;
    onRound?.(r);
    out.push(r);
  }
  return out;
}

/**
 * Several contenders in rounds, each round starting one further along the list (round 1: a,
 * b, c; round 2: b, c, a; …), so each goes first, middle and last as often as the rounds allow.
 */
export async function rotate<K extends string, T>(rounds: number, contenders: ReadonlyArray<readonly [K, (round: number) => Promise<T>]>, onRun?: (round: number, name: K, result: T) => void): Promise<Array<Record<K, T> & { round: number; order: K[] }>> {
  const out: Array<Record<K, T> & { round: number; order: K[] }> = [];
  for (let round = 1; round <= rounds; round++) {
    const order = contenders.map((_, i) => contenders[(i + round - 1) % contenders.length]!);
    const results = {} as Record<K, T>;
    for (const [name, run] of order) {
      results[name] = await run(round);
      onRun?.(round, name, results[name]);
    }
    out.push({ ...results, round, order: order.map(([name]) => name) });
  }
  return out;
}

/**
 * `rounds` runs of every size in `sizes`, the order reversed every other round (small→large,
 * large→small, …) so that a machine speeding up or slowing down over the run does not read as a
 * change of cost with size. Returns each round's result by size.
 */
export async function scalingRounds<R>(sizes: readonly number[], rounds: number, run: (rows: number) => Promise<R>, log: (line: string) => void): Promise<Map<number, R>[]> {
  const results: Map<number, R>[] = [];
  for (let r = 0; r < rounds; r++) {
    const round = new Map<number, R>();
    for (const n of r % 2 === 0 ? sizes : [...sizes].reverse()) {
      log(`scaling round ${r + 1}/${rounds}: ${n} rows`);
      round.set(n, await run(n));
    }
    results.push(round);
  }
  return results;
}

/** `--rounds` (default {@link DEFAULT_ROUNDS}); refuses fewer than one round. */
export function roundsOption(options: ReadonlyMap<string, string>): number {
  const raw = options.get('rounds');
  const n = raw === undefined ? DEFAULT_ROUNDS : Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--rounds must be a positive integer: ${raw}`);
  return n;
}

/**
 * `--wal-compression`: how our sweep's session compresses its full-page images (ADR-069), `off`
 * for the server's setting; default lz4, as the sweeps run. The option's text goes in the JSON.
 */
export function walCompressionOption(options: ReadonlyMap<string, string>): { readonly text: string; readonly method: WalCompressionMethod | false } {
  const text = options.get('wal-compression') ?? 'lz4';
  if (text !== 'off' && !WAL_COMPRESSION_METHODS.includes(text as WalCompressionMethod)) throw new UsageError(`--wal-compression must be off or one of ${WAL_COMPRESSION_METHODS.join(', ')}: ${text}`);
  return { text, method: walCompressionOf(text as WalCompressionMethod | 'off') };
}

export interface MachineInfo {
  readonly cores: number;
  readonly cpu: string;
  readonly memoryGb: number;
  readonly platform: string;
  readonly node: string;
  readonly postgres?: string;
  readonly rabbitmq?: string;
}

/** The machine: cores, CPU, memory, Node, PostgreSQL's version (the test server's), and RabbitMQ's when given. */
export async function machineInfo(servers: { readonly rabbitmq?: string } = {}): Promise<MachineInfo> {
  const sql = createClient(await postgres(), { service: 'bench-machine', max: 1 });
  let pg: string | undefined;
  try {
    const [row] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
    pg = row?.v;
  } finally {
    await sql.end();
  }
  return {
    cores: cpus().length,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
    ...(pg ? { postgres: pg } : {}),
    ...(servers.rabbitmq ? { rabbitmq: servers.rabbitmq } : {}),
  };
}

export interface LoadReport {
  /** 1, 5 and 15-minute load averages when the suite started and when it ended. */
  readonly before: readonly number[];
  readonly after: readonly number[];
  /** Highest 1-minute load average sampled while it ran (every 5 s). */
  readonly maxDuring: number;
  readonly busy: boolean;
  readonly warning?: string;
}

/**
 * Watches the load average while a suite runs. Busy means: the 1-minute load average was at or
 * above {@link BUSY_LOAD} before the suite started (someone else was working), or rose during
 * the run past the cores plus one, more runnable work than a suite of ours makes by itself
 * (each contender keeps at most the cores busy).
 */
export class LoadWatch {
  private readonly before = loadavg().map(round2);
  private max = this.before[0]!;
  private readonly timer = setInterval(() => (this.max = Math.max(this.max, round2(loadavg()[0]!))), 5000);

  constructor() {
    this.timer.unref();
  }

  stop(): LoadReport {
    clearInterval(this.timer);
    const after = loadavg().map(round2);
    const maxDuring = Math.max(this.max, after[0]!);
    const cores = cpus().length;
    const reasons: string[] = [];
    if (this.before[0]! >= BUSY_LOAD) reasons.push(`1-minute load average ${this.before[0]} before the run (busy at >= ${BUSY_LOAD})`);
    if (maxDuring >= cores + 1) reasons.push(`1-minute load average reached ${maxDuring} during the run on ${cores} cores`);
    return {
      before: this.before,
      after,
      maxDuring,
      busy: reasons.length > 0,
      ...(reasons.length ? { warning: `the machine was busy: ${reasons.join('; ')}; the figures are noisy, compare ratios and their IQR` } : {}),
    };
  }
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * What every suite's JSON starts with: the suite, the exact command, the rounds, when it ran,
 * how long it took, the machine and its load. `finish` stamps the wall time and the load.
 */
export function runRecord(suite: string, options: ReadonlyMap<string, string>, rounds: number) {
  const argv = [...options].map(([k, v]) => `--${k} ${v}`);
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const watch = new LoadWatch();
  return {
    finish(machine: MachineInfo): { suite: string; command: string; rounds: number; startedAt: string; wallSeconds: number; machine: MachineInfo; load: LoadReport; warnings: string[] } {
      const load = watch.stop();
      const wallSeconds = Math.round((performance.now() - started) / 100) / 10;
      const warnings: string[] = [];
      if (load.warning) warnings.push(load.warning);
      if (wallSeconds > WALL_BUDGET_SECONDS) warnings.push(`the suite took ${wallSeconds} s, over its ${WALL_BUDGET_SECONDS} s budget at defaults`);
      return { suite, command: ['pnpm xtask bench', suite, ...argv].join(' '), rounds, startedAt, wallSeconds, machine, load, warnings };
    },
  };
}
