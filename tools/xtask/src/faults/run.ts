// Runs fault scenarios: each round on a fresh stack of its own, with a deadline, whatever its
// cleanup throws; one table row per scenario as it finishes (progress on stderr meanwhile) and
// the JSON report.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { resolvePostgres, s3, startEmbeddedPostgres, type EmbeddedServer } from '@craig/testkit';
import { writeLine } from '../command.ts';
import { amqpUrlFrom } from '../devstack/env.ts';
import { localRabbit, type Rabbit } from './rabbit.ts';
import { passed, type FaultScenario, type ScenarioContext, type ScenarioResult } from './scenario.ts';
import { FaultStack } from './stack.ts';

export interface RoundReport {
  readonly round: number;
  readonly passed: boolean;
  readonly ms: number;
  readonly result: ScenarioResult;
}

export interface ScenarioReport {
  readonly name: string;
  readonly summary: string;
  readonly rounds: number;
  readonly passed: boolean;
  /** Why it did not run (the machine lacks what it needs); such a scenario is neither passed nor failed. */
  readonly skipped?: string;
  readonly lost: number;
  readonly duplicated: number;
  /** The slowest round's recovery. */
  readonly recoverMs: number;
  readonly roundReports: readonly RoundReport[];
}

export interface RunOptions {
  readonly rounds: number;
  readonly root: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logDir: string;
  /** Progress lines (stderr). */
  readonly progress: (line: string) => void;
  /** Called as each scenario finishes (the table row). */
  readonly onScenario?: (report: ScenarioReport) => void;
  readonly signal?: AbortSignal;
  /** Longest one round may take; default 10 minutes. */
  readonly roundTimeoutMs?: number;
}

/** Run the scenarios in order; the shared server is resolved once (and stopped after, when embedded). */
export async function runScenarios(scenarios: readonly FaultScenario[], options: RunOptions): Promise<ScenarioReport[]> {
  const resolved = await resolvePostgres({ env: { DATABASE_URL: options.env.CRAIG__DATABASE_URL ?? options.env.DATABASE_URL } });
  const rabbitAccess = scenarios.some((s) => s.needs?.includes('rabbitmq')) ? await localRabbit(amqpUrlFrom(options.env)) : { missing: 'not needed' };
  const rabbit: Rabbit | undefined = 'rabbit' in rabbitAccess ? rabbitAccess.rabbit : undefined;
  const reports: ScenarioReport[] = [];
  try {
    for (const scenario of scenarios) {
      if (options.signal?.aborted) break;
      if (scenario.needs?.includes('rabbitmq') && !rabbit) {
        const report: ScenarioReport = { name: scenario.name, summary: scenario.summary, rounds: 0, passed: false, skipped: 'missing' in rabbitAccess ? rabbitAccess.missing : 'no rabbitmqctl', lost: 0, duplicated: 0, recoverMs: 0, roundReports: [] };
        reports.push(report);
        options.onScenario?.(report);
        continue;
      }
      const rounds: RoundReport[] = [];
      for (let round = 1; round <= options.rounds && !options.signal?.aborted; round++) {
        options.progress(`${scenario.name}: round ${round}/${options.rounds} ...`);
        const started = performance.now();
        const result = await runRound(scenario, round, { ...options, serverUrl: resolved.url, rabbit });
        const ok = passed(result);
        rounds.push({ round, passed: ok, ms: Math.round(performance.now() - started), result });
        options.progress(`${scenario.name}: round ${round} ${ok ? 'passed' : 'FAILED'} in ${((performance.now() - started) / 1000).toFixed(1)} s${ok ? '' : `: ${result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`).join('; ')}`}`);
      }
      const report: ScenarioReport = {
        name: scenario.name,
        summary: scenario.summary,
        rounds: rounds.length,
        passed: rounds.length === options.rounds && rounds.every((r) => r.passed),
        lost: rounds.reduce((n, r) => n + r.result.lost, 0),
        duplicated: rounds.reduce((n, r) => n + r.result.duplicated, 0),
        recoverMs: Math.max(0, ...rounds.map((r) => r.result.recoverMs)),
        roundReports: rounds,
      };
      reports.push(report);
      options.onScenario?.(report);
    }
  } finally {
    await resolved.embedded?.stop();
  }
  return reports;
}

async function runRound(scenario: FaultScenario, round: number, options: RunOptions & { serverUrl: string; rabbit: Rabbit | undefined }): Promise<ScenarioResult> {
  const deferred: Array<() => unknown> = [];
  await mkdir(options.logDir, { recursive: true });
  const tag = `${scenario.name.replace(/[^a-z0-9]+/gi, '-')}${options.rounds > 1 ? `.r${round}` : ''}`;
  const ctx: ScenarioContext = {
    root: options.root,
    serverUrl: options.serverUrl,
    baseEnv: options.env,
    logDir: options.logDir,
    progress: (line) => options.progress(`  ${scenario.name}: ${line}`),
    rabbit: options.rabbit,
    async stack(o) {
      const vhost = o.transport === 'rabbitmq' && !o.amqpUrl ? `craig_faults_${tag}_${Math.random().toString(36).slice(2, 7)}` : undefined;
      if (vhost) {
        if (!options.rabbit) throw new Error('RabbitMQ scenario without rabbitmqctl');
        await options.rabbit.addVhost(vhost);
        deferred.push(() => options.rabbit!.deleteVhost(vhost));
      }
      const amqpUrl = o.amqpUrl ?? (vhost ? options.rabbit!.url(vhost) : undefined);
      const stack = new FaultStack({
        root: options.root,
        scenario: tag,
        serverUrl: o.serverUrl ?? options.serverUrl,
        transport: amqpUrl ? { kind: 'rabbitmq', amqpUrl } : { kind: 'postgres' },
        ...(o.objectStore ? { objectStore: o.objectStore } : {}),
        logDir: options.logDir,
        baseEnv: options.env,
        progress: ctx.progress,
      });
      deferred.push(() => stack.close());
      return stack;
    },
    async s3(o = {}) {
      const server = await s3({ process: 'child', conditional: true, bucket: 'craig-faults', ...(o.port ? { port: o.port } : {}), ...(o.directory ? { directory: o.directory } : {}) });
      deferred.push(() => server.stop());
      return server;
    },
    async embedded() {
      const server: EmbeddedServer = await startEmbeddedPostgres({ process: 'child', logFile: join(options.logDir, `${tag}.postgres.log`) });
      deferred.push(() => server.stop());
      return server;
    },
    defer: (fn) => void deferred.push(fn),
  };
  let result: ScenarioResult;
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeoutMs = options.roundTimeoutMs ?? 600_000;
    result = await Promise.race([
      scenario.run(ctx),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`round did not finish within ${timeoutMs / 1000} s`)), timeoutMs))),
    ]);
  } catch (error) {
    result = { injected: scenario.summary, expected: 0, kept: 0, lost: 0, duplicated: 0, recoverMs: 0, checks: [{ name: 'ran to the end', ok: false, detail: (error as Error).message }] };
  } finally {
    clearTimeout(timer);
  }
  for (const fn of deferred.reverse()) {
    try {
      await fn();
    } catch (error) {
      options.progress(`  ${scenario.name}: cleanup failed: ${(error as Error).message}`);
    }
  }
  return result;
}

/** One table row per scenario. */
export function scenarioRow(report: ScenarioReport): string[] {
  const last = report.roundReports.at(-1)?.result;
  const failing = report.roundReports.flatMap((r) => r.result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`));
  return [
    report.name,
    last?.injected ?? report.summary,
    last ? String(last.expected) : '-',
    last ? String(last.kept) : '-',
    String(report.lost),
    String(report.duplicated),
    report.skipped ? '-' : `${(report.recoverMs / 1000).toFixed(1)} s`,
    report.skipped ? `skipped (${report.skipped})` : report.passed ? 'ok' : `FAILED: ${failing.slice(0, 2).join('; ')}`,
  ];
}

export const TABLE_HEADER = ['scenario', 'injected', 'expected', 'kept', 'lost', 'duplicated', 'recovered in', 'verdict'];

/** `bench/results/faults.json`. */
export async function writeReport(file: string, reports: readonly ScenarioReport[], meta: { readonly rounds: number; readonly startedAt: string; readonly ms: number }): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const body = {
    suite: 'faults',
    startedAt: meta.startedAt,
    ms: meta.ms,
    rounds: meta.rounds,
    machine: { cores: cpus().length, node: process.version, loadAverage: loadavg().map((l) => Number(l.toFixed(2))) },
    scenarios: reports.map((r) => ({
      name: r.name,
      rounds: r.rounds,
      passed: r.passed,
      ...(r.skipped ? { skipped: r.skipped } : {}),
      lost: r.lost,
      duplicated: r.duplicated,
      recoverMs: r.recoverMs,
      injected: r.roundReports.at(-1)?.result.injected ?? r.summary,
      expected: r.roundReports.at(-1)?.result.expected ?? 0,
      kept: r.roundReports.at(-1)?.result.kept ?? 0,
      checks: r.roundReports.at(-1)?.result.checks ?? [],
    })),
  };
  await writeFile(file, `${JSON.stringify(body, null, 2)}\n`);
}

export function writeRow(out: Writable, cells: readonly string[], widths: readonly number[]): void {
  writeLine(out, cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
}

const DOC_BEGIN = '<!-- faults:begin';
const DOC_END = '<!-- faults:end -->';

/** Replace the table between docs/reliability.md's faults markers with this run's rows. */
export async function writeDocsTable(file: string, reports: readonly ScenarioReport[], meta: { readonly startedAt: string; readonly rounds: number; readonly command: string }): Promise<void> {
  const doc = await readFile(file, 'utf8');
  const begin = doc.indexOf(DOC_BEGIN);
  const end = doc.indexOf(DOC_END);
  if (begin < 0 || end < begin) throw new Error(`${file} has no faults markers (${DOC_BEGIN} … ${DOC_END})`);
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const rows = reports.map((r) => `| ${scenarioRow(r).map(cell).join(' | ')} |`);
  const passedCount = reports.filter((r) => r.passed).length;
  const table = [
    `${doc.slice(begin, doc.indexOf('\n', begin))}`,
    '',
    `\`${meta.command}\`, ${meta.startedAt}, ${meta.rounds} round(s) each: ${passedCount} of ${reports.length} passed, ${reports.reduce((n, r) => n + r.lost, 0)} rows or events lost, ${reports.reduce((n, r) => n + r.duplicated, 0)} side effects duplicated.`,
    '',
    `| ${TABLE_HEADER.join(' | ')} |`,
    `|${TABLE_HEADER.map(() => '---').join('|')}|`,
    ...rows,
    '',
  ].join('\n');
  await writeFile(file, doc.slice(0, begin) + table + doc.slice(end));
}
