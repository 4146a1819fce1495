import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface MainProcess {
  readonly child: ChildProcess;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** stdout and stderr so far. */
  output(): string;
  /** The `step` of each "stopped" log line, in the order they were logged. */
  stoppedSteps(): string[];
}

/** Run this service's `src/main.ts` as an operator does: a child configured only through `env`. */
export function startMain(env: Record<string, string>): MainProcess {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  // eslint-disable-next-line no-restricted-properties -- a test helper: the child gets only PATH from the parent
  const path = process.env.PATH ?? '';
  const child = spawn(process.execPath, ['--import', 'tsx', main], { cwd: fileURLToPath(new URL('..', import.meta.url)), env: { PATH: path, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => out,
    // By each line's own time, not arrival order: under load a child's last log lines can reach
    // the pipe out of order (the timestamps are still right).
    stoppedSteps: () =>
      out
        .split('\n')
        .flatMap((line) => {
          if (!line.startsWith('{') || !line.endsWith('}')) return [];
          const entry = JSON.parse(line) as { msg?: string; step?: string; time?: string };
          return entry.msg === 'stopped' && entry.step ? [{ step: entry.step, at: Date.parse(entry.time ?? '') }] : [];
        })
        .sort((a, b) => a.at - b.at)
        .map((e) => e.step),
  };
}
