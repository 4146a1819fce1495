import { SUITES } from '../bench/index.ts';
import { parseArgs, UsageError, type Command } from '../command.ts';

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark suite against real servers; prints ratios against a same-run baseline',
  get usage() {
    return `pnpm xtask bench <suite> [options]

Each suite measures our implementation beside a baseline measured in the same run on the same
machine (the throughput ceiling), prints a table and writes bench/results/<suite>.json.
Machines are noisy: compare the ratios, not the absolute figures.

Suites:
${SUITES.map((s) => `  ${s.name.padEnd(10)} ${s.summary}${s.options.length ? ` (options: ${s.options.map((o) => `--${o}`).join(' ')})` : ''}`).join('\n') || '  (none yet)'}`;
  },
  async run(ctx) {
    const [name] = ctx.argv;
    const suite = SUITES.find((s) => s.name === name);
    if (!suite) throw new UsageError(name ? `unknown suite "${name}"` : 'expected a suite name');
    const { positionals, options } = parseArgs(ctx.argv.slice(1), { options: suite.options });
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
    await suite.run(ctx, options);
    return 0;
  },
};
