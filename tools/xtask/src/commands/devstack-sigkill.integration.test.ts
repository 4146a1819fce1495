// A devstack killed with SIGKILL (no handler of its own runs) leaves no process behind: every
// service notices its IPC channel close and stops itself, the embedded cluster's keeper stops
// the cluster, the S3 server sees its stdin end. And the next devstack on the same state
// directory starts cleanly. On a platform where the children did not watch their parent, the
// services and the postmaster would run on as orphans, and the second start would find the
// data directory locked.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive, commandLine, descendants, eventually, tcpReachable } from '@craig/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { freePortRange } from '../ports.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
let stateDir: string | undefined;
const leftovers: number[] = [];

afterAll(async () => {
  // Whatever a failed run left running is killed here, so it cannot disturb later tests.
  for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

function devstack(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CRAIG_') && k !== 'DATABASE_URL') env[k] = v;
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'devstack', '--quiet', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return { child, output: () => out, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

describe('a devstack killed with SIGKILL', () => {
  it('leaves no child process behind, and the next devstack on its state directory starts cleanly', async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'craig-devstack-kill-'));
    const portBase = await freePortRange(8);
    const common = ['--only', 'cases,placements', '--state-dir', stateDir, '--port-base', String(portBase), '--status-port', 'off', '--history-rows', '200'];
    const first = devstack(common);
    await eventually(() => expect(first.output()).toContain('stack up'), { timeoutMs: 120_000, intervalMs: 250 });
    const tree = descendants(first.child.pid!);
    leftovers.push(...tree);
    const names = tree.map(commandLine);
    // What it runs: the postmaster (under its keeper), the S3 server, two services.
    expect(names.filter((c) => /\/bin\/postgres -D /.test(c))).toHaveLength(1);
    expect(names.filter((c) => c.includes('s3-server-main.ts'))).toHaveLength(1);
    expect(names.filter((c) => /services\/(cases|placements)\/src\/main\.ts/.test(c))).toHaveLength(2);

    first.child.kill('SIGKILL');
    await first.exited;
    // Each notices by itself, within seconds: nothing is left, nothing listens on the ports.
    await eventually(() => expect(tree.filter(alive).map((pid) => `${pid} ${commandLine(pid)}`)).toEqual([]), { timeoutMs: 30_000, intervalMs: 250 });
    expect(await tcpReachable('127.0.0.1', portBase, 300)).toBe(false);
    expect(await tcpReachable('127.0.0.1', portBase + 1, 300)).toBe(false);

    const second = devstack([...common, '--for', '3']);
    const code = await second.exited;
    leftovers.push(...descendants(second.child.pid!));
    expect(code, second.output()).toBe(0);
    expect(second.output()).toContain('stack up');
    expect(second.output()).toContain('cases: stayed up');
    expect(second.output()).toContain('placements: stayed up');
  }, 240_000);
});
