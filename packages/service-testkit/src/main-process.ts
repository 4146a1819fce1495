import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { S3TestServer } from '@craig/testkit';
import { eventually } from '@craig/testkit';
import { runtimeUrl } from './runtime.ts';

export interface MainProcess {
  readonly child: ChildProcess;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** stdout and stderr so far. */
  output(): string;
  /** The `step` of each "stopped" log line, in the order they were logged. */
  stoppedSteps(): string[];
  /** SIGTERM, as an orchestrator stops it: the exit code and the steps in the order they stopped. */
  terminate(): Promise<{ readonly code: number | null; readonly stopped: string[] }>;
}

/**
 * Run a service's `src/main.ts` (pass `new URL('./main.ts', import.meta.url)`) as an operator
 * does: a child under tsx, in the service's directory, configured only through `env` (plus PATH).
 */
export function startMain(main: URL, env: Record<string, string>): MainProcess {
  const file = fileURLToPath(main);
  // eslint-disable-next-line no-restricted-properties -- a test helper: the child gets only PATH from the parent
  const path = process.env.PATH ?? '';
  const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: dirname(dirname(file)), env: { PATH: path, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => out,
    stoppedSteps: () => stoppedSteps(out),
    async terminate() {
      child.kill('SIGTERM');
      const code = await exited;
      return { code, stopped: stoppedSteps(out) };
    },
  };
}

/** Start `main` and let it exit by itself (a refusal to start): its code, its output and the steps it stopped. */
export async function runToExit(main: URL, env: Record<string, string>): Promise<{ readonly code: number | null; readonly output: string; readonly stopped: string[] }> {
  const proc = startMain(main, env);
  try {
    const code = await proc.exited;
    return { code, output: proc.output(), stopped: proc.stoppedSteps() };
  } finally {
    proc.child.kill('SIGKILL');
  }
}

/**
 * The `step` of each "stopped" line of a JSON log, by each line's own time, not arrival order:
 * under load a child's last log lines can reach the pipe out of order (the timestamps are still right).
 */
export function stoppedSteps(log: string): string[] {
  return log
    .split('\n')
    .flatMap((line) => {
      if (!line.startsWith('{') || !line.endsWith('}')) return [];
      const entry = JSON.parse(line) as { msg?: string; step?: string; time?: string };
      return entry.msg === 'stopped' && entry.step ? [{ step: entry.step, at: Date.parse(entry.time ?? '') }] : [];
    })
    .sort((a, b) => a.at - b.at)
    .map((e) => e.step);
}

/** Wait until `GET /readyz` on the port answers 200 (fails after `timeoutMs`). */
export async function waitReady(port: number, timeoutMs = 30_000): Promise<void> {
  await eventually(async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    if (res.status !== 200) throw new Error(`/readyz answered ${res.status}`);
  }, { timeoutMs });
}

/** The settings of a service's object store on the test S3 server (`CRAIG_<SERVICE>__OBJECT_STORE_*`). */
export function objectStoreEnv(service: string, server: S3TestServer): Record<string, string> {
  const p = `CRAIG_${service.toUpperCase()}__OBJECT_STORE_`;
  return {
    [`${p}BACKEND`]: 's3',
    [`${p}ENDPOINT`]: server.endpoint,
    [`${p}REGION`]: server.region,
    [`${p}BUCKET`]: server.bucket,
    [`${p}ACCESS_KEY_ID`]: server.accessKeyId,
    [`${p}SECRET_ACCESS_KEY`]: server.secretAccessKey,
    [`${p}FORCE_PATH_STYLE`]: 'true',
  };
}

/**
 * A service's base settings: its database, the bus database, the admin token and the HTTP port.
 * With `runtimeRole`, the service runs as production does: DATABASE_URL logs in as that role
 * and MIGRATION_DATABASE_URL is `databaseUrl` (the owner); without it, one login does both.
 */
export function serviceEnv(
  service: string,
  options: { readonly databaseUrl: string; readonly busDatabaseUrl: string; readonly adminToken: string; readonly port: number; readonly runtimeRole?: string },
): Record<string, string> {
  const p = `CRAIG_${service.toUpperCase()}__`;
  const logins = options.runtimeRole
    ? { [`${p}DATABASE_URL`]: runtimeUrl(options.databaseUrl, options.runtimeRole), [`${p}MIGRATION_DATABASE_URL`]: options.databaseUrl, [`${p}RUNTIME_ROLE`]: options.runtimeRole }
    : { [`${p}DATABASE_URL`]: options.databaseUrl };
  return { ...logins, [`${p}BUS_DATABASE_URL`]: options.busDatabaseUrl, [`${p}ADMIN_TOKEN`]: options.adminToken, [`${p}HTTP_PORT`]: String(options.port) };
}
