// The fast half of the fault matrix (`pnpm xtask faults --fast`), one test per scenario: each
// kill or restart once, against real child processes, PostgreSQL, RabbitMQ and the S3 server.
// Every scenario asserts exact counts of its own (rows kept, lost, side effects duplicated); a
// failing one names its failed checks here. The full matrix (outages past the 180 s budget, the
// broker restart, eight services × two replicas) is `pnpm xtask faults`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgres } from '@craig/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { runScenarios, SCENARIOS } from '../faults/index.ts';
import { capture } from '../test-io.ts';
import { runXtask } from '../run.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
let logDir: string | undefined;

afterAll(async () => {
  if (logDir) await rm(logDir, { recursive: true, force: true });
});

describe('pnpm xtask faults --fast', () => {
  it('refuses an unknown scenario and a bad --rounds, naming the value', async () => {
    const err = capture();
    expect(await runXtask(['faults', '--only', 'kill-everything'], { stdout: capture(), stderr: err, root: ROOT })).toBe(2);
    expect(err.text()).toContain('--only: unknown scenario "kill-everything"');
    const rounds = capture();
    expect(await runXtask(['faults', '--rounds', '0'], { stdout: capture(), stderr: rounds, root: ROOT })).toBe(2);
    expect(rounds.text()).toContain('--rounds "0": must be a whole number from 1 to 99');
  });

  it('has at least ten scenarios, the fast ones among them', () => {
    expect(SCENARIOS.length).toBeGreaterThanOrEqual(10);
    expect(SCENARIOS.filter((s) => s.fast).length).toBeGreaterThanOrEqual(10);
    expect(new Set(SCENARIOS.map((s) => s.name)).size).toBe(SCENARIOS.length);
  });

  it.each(SCENARIOS.filter((s) => s.fast).map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
    logDir ??= await mkdtemp(join(tmpdir(), 'craig-faults-test-'));
    const lines: string[] = [];
    const env = { ...process.env, DATABASE_URL: await postgres() };
    const [report] = await runScenarios([scenario], { rounds: 1, root: ROOT, env, logDir, progress: (l) => lines.push(l), roundTimeoutMs: 420_000 });
    const result = report!.roundReports[0]?.result;
    const failed = result?.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`) ?? [report!.skipped ?? 'did not run'];
    expect(report!.skipped, 'a CI scenario must not be skipped').toBeUndefined();
    expect(failed, lines.slice(-40).join('\n')).toEqual([]);
    expect(report!.passed).toBe(true);
    expect(report!.lost).toBe(0);
    expect(report!.duplicated).toBe(0);
    expect(result!.expected).toBeGreaterThan(0);
    expect(result!.kept).toBe(result!.expected);
  }, 480_000);
});
