import type { Writable } from 'node:stream';

/** What a command gets: its arguments, the environment and where to write. */
export interface CommandContext {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: Writable;
  readonly stderr: Writable;
  /** Aborted on SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** Root of the workspace (for docs/, bench/results/). */
  readonly root: string;
}

export interface Command {
  readonly name: string;
  /** One line for `pnpm xtask --help`. */
  readonly summary: string;
  /** Full usage for `pnpm xtask <name> --help`. */
  readonly usage: string;
  /** Returns the process exit code. */
  run(ctx: CommandContext): Promise<number>;
}

/** A usage mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Minimal `--flag value` / `--flag` / positional parser; unknown flags are usage errors. */
export function parseArgs(argv: readonly string[], spec: { flags?: readonly string[]; options?: readonly string[] }): { positionals: string[]; flags: Set<string>; options: Map<string, string> } {
  const positionals: string[] = [];
  const flags = new Set<string>();
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
    if (spec.flags?.includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      flags.add(name);
    } else if (spec.options?.includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      options.set(name, value);
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return { positionals, flags, options };
}

export function writeLine(stream: Writable, line = ''): void {
  stream.write(`${line}\n`);
}
