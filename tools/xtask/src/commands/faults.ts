import { join } from 'node:path';
import { printTable } from '../bench/measure.ts';
import { parseArgs, UsageError, writeLine, type Command } from '../command.ts';
import { runScenarios, SCENARIOS, scenarioRow, TABLE_HEADER, writeDocsTable, writeReport } from '../faults/index.ts';

export const faultsCommand: Command = {
  name: 'faults',
  summary: 'the fault matrix: kill, restart and outage scenarios against real processes and servers (exit 1 on any failure)',
  get usage() {
    return `pnpm xtask faults [--only a,b] [--fast] [--rounds N] [--out FILE] [--log-dir DIR] [--write-docs]

Runs each scenario on databases of its own (on CRAIG__DATABASE_URL / DATABASE_URL, else the
PostgreSQL on 127.0.0.1:5432, else an embedded cluster), with the services as real child
processes under the devstack's supervisor, and injects its fault from outside: SIGKILL, the
stack's own PostgreSQL cluster stopped with -m immediate, RabbitMQ connections closed (on a
vhost of the scenario's own, through rabbitmqctl), the S3 test server killed, answering 500s,
stalling or refusing. Prints one row per scenario (what was injected, what was expected, kept,
lost, side effects duplicated, time to recover, verdict), writes FILE (default
bench/results/faults.json), and exits 1 when any scenario failed. Progress goes to stderr;
the services' logs to DIR/<start time>/ (default .devstack/faults).

  --only a,b    run these scenarios (names below)
  --fast        only the fast ones (each kill or restart once; what CI runs)
  --rounds N    run each scenario N times (default 1); recovery is the slowest round's
  --write-docs  also write the table into docs/reliability.md (between its faults markers)

Scenarios:
${SCENARIOS.map((s) => `  ${s.name.padEnd(30)} ${s.summary}${s.fast ? '' : ' (full matrix only)'}`).join('\n')}`;
  },
  async run(ctx) {
    const { positionals, flags, options } = parseArgs(ctx.argv, { flags: ['fast', 'write-docs'], options: ['only', 'rounds', 'out', 'log-dir'] });
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
    const roundsRaw = options.get('rounds') ?? '1';
    if (!/^[1-9][0-9]?$/.test(roundsRaw)) throw new UsageError(`--rounds ${JSON.stringify(roundsRaw)}: must be a whole number from 1 to 99`);
    let selected = SCENARIOS.filter((s) => !flags.has('fast') || s.fast);
    const only = options.get('only');
    if (only !== undefined) {
      const names = only.split(',').map((n) => n.trim());
      for (const name of names) {
        if (!SCENARIOS.some((s) => s.name === name)) throw new UsageError(`--only: unknown scenario "${name}" (known: ${SCENARIOS.map((s) => s.name).join(', ')})`);
      }
      selected = selected.filter((s) => names.includes(s.name));
    }
    if (selected.length === 0) throw new UsageError('no scenario selected');
    const rounds = Number(roundsRaw);
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const progress = (line: string) => writeLine(ctx.stderr, `[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${line}`);
    // A directory per run: a scenario's logs are never mixed with an earlier run's.
    const logDir = join(options.get('log-dir') ?? join(ctx.root, '.devstack', 'faults'), startedAt.replace(/[:.]/g, '-'));
    progress(`faults: ${selected.length} scenario(s), ${rounds} round(s) each; service logs in ${logDir}`);
    const reports = await runScenarios(selected, {
      rounds,
      root: ctx.root,
      env: ctx.env,
      logDir,
      progress,
      signal: ctx.signal,
      onScenario: (report) => progress(scenarioRow(report).join(' | ')),
    });
    printTable(ctx.stdout, TABLE_HEADER, reports.map(scenarioRow));
    const failed = reports.filter((r) => !r.passed && !r.skipped);
    const skipped = reports.filter((r) => r.skipped);
    const file = options.get('out') ?? join(ctx.root, 'bench', 'results', 'faults.json');
    await writeReport(file, reports, { rounds, startedAt, ms: Math.round(performance.now() - t0) });
    writeLine(ctx.stdout, `${reports.length - failed.length - skipped.length} passed, ${failed.length} failed, ${skipped.length} skipped; wrote ${file}`);
    if (flags.has('write-docs')) {
      const doc = join(ctx.root, 'docs', 'reliability.md');
      await writeDocsTable(doc, reports, { startedAt, rounds, command: `pnpm xtask faults ${ctx.argv.join(' ')}`.trim() });
      writeLine(ctx.stdout, `wrote the table in ${doc}`);
    }
    return failed.length > 0 ? 1 : 0;
  },
};
