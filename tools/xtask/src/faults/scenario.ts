// What a fault scenario is and what it reports. A scenario builds its own stack, injects one
// fault from outside, lets the platform recover by itself, and counts: what it expected to
// survive or be processed, what was kept, what was lost, which side effects ran twice, how long
// recovery took, and every named check (each an exact number against what it must be).
import type { EmbeddedServer, S3TestServer } from '@craig/testkit';
import type { FaultStack, FaultStackOptions } from './stack.ts';
import type { Rabbit } from './rabbit.ts';

export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface ScenarioResult {
  /** What was injected, in a few words. */
  readonly injected: string;
  /** Rows or events that must come through (survive, or be processed once). */
  readonly expected: number;
  readonly kept: number;
  readonly lost: number;
  /** Side effects that ran more than once. */
  readonly duplicated: number;
  /** From the fault to the platform having recovered by itself (the scenario says what that means). */
  readonly recoverMs: number;
  readonly checks: readonly Check[];
}

export interface ScenarioContext {
  readonly root: string;
  /** Admin URL of the shared server the scenarios' databases are created on. */
  readonly serverUrl: string;
  readonly baseEnv: Readonly<Record<string, string | undefined>>;
  readonly logDir: string;
  readonly progress: (line: string) => void;
  /** RabbitMQ through rabbitmqctl (a vhost of the scenario's own), when the machine has it. */
  readonly rabbit: Rabbit | undefined;
  /** A stack on `serverUrl` (or the given server), closed after the scenario. */
  stack(options: { readonly transport?: 'postgres' | 'rabbitmq'; readonly serverUrl?: string; readonly objectStore?: S3TestServer; readonly amqpUrl?: string }): Promise<FaultStack>;
  /** The S3 test server in a child process (`port` pins it, to bring it back where it was), stopped after the scenario. */
  s3(options?: { readonly port?: number; readonly directory?: string }): Promise<S3TestServer>;
  /** A PostgreSQL cluster of the scenario's own (the only kind a scenario may stop), stopped after it. */
  embedded(): Promise<EmbeddedServer>;
  /** Run after the scenario, in reverse order, whatever happened. */
  defer(fn: () => unknown): void;
}

export interface FaultScenario {
  readonly name: string;
  /** One line for the table and `--help`. */
  readonly summary: string;
  /** Part of `--fast` (CI): each kill or restart once, seconds each. */
  readonly fast: boolean;
  /** What the machine must offer; a scenario that lacks it is reported as skipped, with why. */
  readonly needs?: readonly ('rabbitmq')[];
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** Collects a scenario's checks and counts as it goes. */
export class Outcome {
  private readonly list: Check[] = [];
  expected = 0;
  kept = 0;
  lost = 0;
  duplicated = 0;
  recoverMs = 0;

  constructor(readonly injected: string) {}

  /** A named check. */
  check(name: string, ok: boolean, detail: string): boolean {
    this.list.push({ name, ok, detail });
    return ok;
  }

  /** `actual` must be exactly `expected`. */
  equal(name: string, actual: number | string | boolean, expected: number | string | boolean): boolean {
    return this.check(name, actual === expected, actual === expected ? String(actual) : `${String(actual)}, expected ${String(expected)}`);
  }

  /** `actual` must be at most `max`. */
  atMost(name: string, actual: number, max: number, unit = ''): boolean {
    return this.check(name, actual <= max, `${actual}${unit}${actual <= max ? ` ≤ ${max}${unit}` : `, more than ${max}${unit}`}`);
  }

  /** `actual` must be at least `min`. */
  atLeast(name: string, actual: number, min: number, unit = ''): boolean {
    return this.check(name, actual >= min, `${actual}${unit}${actual >= min ? ` ≥ ${min}${unit}` : `, fewer than ${min}${unit}`}`);
  }

  result(): ScenarioResult {
    return { injected: this.injected, expected: this.expected, kept: this.kept, lost: this.lost, duplicated: this.duplicated, recoverMs: Math.round(this.recoverMs), checks: this.list };
  }
}

/** Whether a scenario's result passes: every check holds, nothing lost, nothing duplicated. */
export function passed(result: ScenarioResult): boolean {
  return result.lost === 0 && result.duplicated === 0 && result.checks.length > 0 && result.checks.every((c) => c.ok);
}

export type { FaultStack, FaultStackOptions };
