import type { CommandContext } from '../command.ts';

/** One `pnpm xtask bench <name>` suite. It prints a table and writes bench/results/<name>.json. */
export interface BenchSuite {
  readonly name: string;
  readonly summary: string;
  /** Extra `--option value` names the suite accepts (e.g. `rows`). */
  readonly options: readonly string[];
  run(ctx: CommandContext, options: ReadonlyMap<string, string>): Promise<void>;
}
