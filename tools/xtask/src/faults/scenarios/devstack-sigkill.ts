// The devstack itself killed with SIGKILL (no handler of its own runs): every process it started
// (the services, the cluster's keeper and postmaster, the S3 server) must notice and stop by
// itself, and the next devstack on the same state directory must start cleanly.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, commandLine, descendants } from '@craig/testkit';
import { freePortRange } from '../../ports.ts';
import { Outcome, type FaultScenario, type ScenarioContext } from '../scenario.ts';
import { waitFor } from '../wait.ts';

function devstack(ctx: ScenarioContext, args: readonly string[]) {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.baseEnv)) if (v !== undefined && !k.startsWith('CRAIG_') && k !== 'DATABASE_URL') env[k] = v;
  const child = spawn(process.execPath, ['--import', 'tsx', join(ctx.root, 'tools/xtask/src/main.ts'), 'devstack', '--quiet', ...args], { cwd: ctx.root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export const devstackSigkill: FaultScenario = {
  name: 'devstack-sigkill',
  summary: 'the devstack killed with SIGKILL: nothing it started may outlive it, and it starts again cleanly',
  fast: true,
  async run(ctx) {
    const out = new Outcome('SIGKILL to the devstack (cases, placements, embedded cluster, S3)');
    const stateDir = await mkdtemp(join(tmpdir(), 'craig-faults-devstack-'));
    ctx.defer(() => rm(stateDir, { recursive: true, force: true }));
    const common = ['--only', 'cases,placements', '--status-port', 'off', '--state-dir', stateDir, '--port-base', String(await freePortRange(8)), '--history-rows', '200'];
    const first = devstack(ctx, common);
    await waitFor('the first devstack up', () => first.output().includes('stack up'), { timeoutMs: 120_000, intervalMs: 250 });
    const tree = descendants(first.child.pid!);
    ctx.defer(() => tree.filter(alive).forEach((pid) => process.kill(pid, 'SIGKILL')));
    const names = tree.map(commandLine);
    const started = names.filter((c) => /\/bin\/postgres -D |s3-server-main\.ts|services\/\w+\/src\/main\.ts/.test(c)).length;
    out.equal('processes it started (postmaster, S3 server, two services)', started, 4);
    const killedAt = performance.now();
    first.child.kill('SIGKILL');
    await first.exited;
    const gone = await waitFor('every child to stop by itself', () => tree.every((pid) => !alive(pid)), { timeoutMs: 30_000, intervalMs: 100 }).catch(() => false);
    const left = tree.filter(alive);
    out.check('processes left behind', gone === true, left.length === 0 ? 'none' : left.map((pid) => `${pid} ${commandLine(pid)}`).join('; '));
    out.recoverMs = performance.now() - killedAt;
    const second = devstack(ctx, [...common, '--for', '3']);
    const code = await second.exited;
    ctx.defer(() => descendants(second.child.pid!).filter(alive).forEach((pid) => process.kill(pid, 'SIGKILL')));
    out.equal('the next devstack on the same state directory: exit code', code ?? -1, 0);
    out.check('the next devstack: both services stayed up', second.output().includes('cases: stayed up') && second.output().includes('placements: stayed up'), second.output().split('\n').filter((l) => l.includes('stayed up') || l.startsWith('result')).join('; '));
    // Counted in processes: each must have stopped by itself (nothing here can be lost or run twice).
    out.expected = started;
    out.kept = started - left.length;
    return out.result();
  },
};
