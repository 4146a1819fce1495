import { fileURLToPath } from 'node:url';
import { SettingsError } from '@craig/settings';
import { UsageError, writeLine, type CommandContext } from './command.ts';
import { COMMANDS } from './commands/index.ts';

export const WORKSPACE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Run one xtask invocation; returns the exit code. Tests call this in process. */
export async function runXtask(argv: readonly string[], io: Partial<Omit<CommandContext, 'argv'>> = {}): Promise<number> {
  const ctx: Omit<CommandContext, 'argv'> = {
    env: io.env ?? process.env,
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    signal: io.signal ?? new AbortController().signal,
    root: io.root ?? WORKSPACE_ROOT,
  };
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    writeLine(ctx.stdout, 'usage: pnpm xtask <command> [options]\n');
    const width = Math.max(...COMMANDS.map((c) => c.name.length));
    for (const c of COMMANDS) writeLine(ctx.stdout, `  ${c.name.padEnd(width)}  ${c.summary}`);
    writeLine(ctx.stdout, '\n`pnpm xtask <command> --help` for a command\'s usage.');
    return name ? 0 : 2;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    writeLine(ctx.stderr, `unknown command "${name}"; run pnpm xtask --help`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    writeLine(ctx.stdout, command.usage);
    return 0;
  }
  try {
    return await command.run({ ...ctx, argv: rest });
  } catch (error) {
    if (error instanceof UsageError) {
      writeLine(ctx.stderr, `xtask ${name}: ${error.message}\n\n${command.usage}`);
      return 2;
    }
    if (error instanceof SettingsError) {
      writeLine(ctx.stderr, error.message);
      return 1;
    }
    throw error;
  }
}
