// The stack one fault scenario runs on: its own databases on a PostgreSQL server (the local one,
// or a cluster of its own when the scenario restarts it), a transport (the bus on that server,
// or a RabbitMQ vhost of its own), optionally the S3 test server, and services started as real
// child processes by the devstack's supervisor, with the environment the devstack would give
// them. Faults are injected from outside: signals to those processes, the server stopped, the
// broker's connections closed, the object store answering errors.
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createClient, type Sql } from '@craig/db';
import { SERVICE_PROFILES, type ServiceName } from '@craig/settings';
import type { S3TestServer } from '@craig/testkit';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';
import { dropDatabases, ensureDatabase } from '../devstack/databases.ts';
import { childEnv, serviceEnv, withDatabase, type StackInfra } from '../devstack/env.ts';
import { parsePrometheusText, type Sample } from '../devstack/metrics-parse.ts';
import { SupervisedService } from '../devstack/supervisor.ts';
import { freePortRange } from '../ports.ts';
import { sleep, waitFor } from './wait.ts';

export interface FaultStackOptions {
  /** Workspace root (where the services and tsx are). */
  readonly root: string;
  /** Scenario name: log file names and database names. */
  readonly scenario: string;
  /** Admin URL of the server the databases are created on. */
  readonly serverUrl: string;
  readonly transport: { readonly kind: 'postgres' } | { readonly kind: 'rabbitmq'; readonly amqpUrl: string };
  readonly objectStore?: S3TestServer;
  /** Where the service logs go. */
  readonly logDir: string;
  /** The environment the services inherit (PATH and the like; CRAIG_* keys are dropped). */
  readonly baseEnv: Readonly<Record<string, string | undefined>>;
  readonly progress: (line: string) => void;
}

/** One service process (a replica) of a fault stack. */
export interface FaultService {
  readonly name: ServiceName;
  readonly supervisor: SupervisedService;
  readonly url: string;
  /** The service's settings as the process got them. */
  readonly env: Readonly<Record<string, string>>;
  /** The live process's pid (a new one after each restart). */
  pid(): number;
  /** Send a signal to the live process (the supervisor restarts it after a crash). */
  kill(signal: NodeJS.Signals): number;
  /** Wait until the supervisor reports it up (ready on /readyz). */
  up(timeoutMs?: number): Promise<void>;
  /** The samples of its /metrics now. */
  metrics(): Promise<Sample[]>;
  /** Its log so far (every process it ran), as parsed pino lines. */
  log(): Promise<Array<Record<string, unknown>>>;
  /** A JSON request with the admin token: the status and the parsed body (never throws for a status). */
  request(method: string, path: string, body?: unknown): Promise<{ readonly status: number; readonly body: unknown }>;
  /** The same, refusing anything but 2xx with an error naming the request and the answer. */
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  stop(timeoutMs?: number): Promise<void>;
}

export const FAULT_ADMIN_TOKEN = 'craig-faults-admin-token-0123456789abcdef';
/** The services' runtime logins' password (set by `pnpm xtask migrate` as each service is migrated). */
export const FAULT_RUNTIME_PASSWORD = 'craig-faults-runtime-password';

/** A fault stack: databases are created on demand and dropped by `close()`. */
export class FaultStack {
  readonly prefix: string;
  private readonly services: FaultService[] = [];
  private readonly pools = new Map<string, Sql>();
  private readonly databases = new Set<string>();
  private portBase: number | undefined;
  private nextPort = 0;

  constructor(readonly options: FaultStackOptions) {
    const tag = options.scenario.replace(/[^a-z0-9]+/g, '_').slice(0, 18);
    this.prefix = `craig_f_${tag}_${Math.random().toString(36).slice(2, 7)}_`;
    mkdirSync(options.logDir, { recursive: true });
  }

  /** The infra the devstack's `serviceEnv` derives every service's settings from. */
  private infra(): StackInfra {
    const store = this.options.objectStore;
    return {
      serverUrl: this.options.serverUrl,
      dbPrefix: this.prefix,
      adminToken: FAULT_ADMIN_TOKEN,
      runtimePassword: FAULT_RUNTIME_PASSWORD,
      portBase: undefined,
      transport: this.options.transport,
      objectStore: store ? { endpoint: store.endpoint, region: store.region, bucket: store.bucket, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey } : undefined,
    };
  }

  /** The database URL a service of this stack uses. */
  databaseUrl(name: ServiceName): string {
    return withDatabase(this.options.serverUrl, `${this.prefix}${name}`);
  }

  get busUrl(): string {
    return withDatabase(this.options.serverUrl, `${this.prefix}bus`);
  }

  /** An owner pool on a service's database (created on first use, closed by `close()`); the services themselves log in as their runtime roles. */
  sql(name: ServiceName | 'bus'): Sql {
    const url = name === 'bus' ? this.busUrl : this.databaseUrl(name);
    let pool = this.pools.get(url);
    if (!pool) {
      pool = createClient(url, { service: `faults:${this.options.scenario}`.slice(0, 60), max: 3, statementTimeoutMs: 120_000, idleTimeoutSeconds: 5 });
      this.pools.set(url, pool);
    }
    return pool;
  }

  /** The environment a service process gets, with `settings` (keys without the prefix) over the devstack's. */
  async env(name: ServiceName, settings: Readonly<Record<string, string>> = {}): Promise<Record<string, string>> {
    const profile = SERVICE_PROFILES[name];
    this.portBase ??= await freePortRange(16);
    const port = this.portBase + this.nextPort++;
    // The devstack's derivation; each process its own port.
    const user: Record<string, string> = { [`${profile.envPrefix}HTTP_PORT`]: String(port) };
    // The archive timer's first cycle soon after a start (3 s + security's phase = 4 s; the
    // devstack's 20 s, production's 300 s would only make the scenarios wait).
    const own: Record<string, string> = { ...(profile.archive ? { ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: '3' } : {}), ...settings };
    for (const [key, value] of Object.entries(own)) user[`${profile.envPrefix}${key}`] = value;
    const generated = serviceEnv(profile, this.infra(), user);
    const base: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(this.options.baseEnv)) if (!k.startsWith('CRAIG_')) base[k] = v;
    return childEnv(base, generated);
  }

  /** Create the service's (and the bus's) database when missing and apply its migrations, as `pnpm xtask migrate` does. */
  async migrate(name: ServiceName, env: Readonly<Record<string, string>>): Promise<void> {
    const maintenance = this.options.serverUrl;
    await ensureDatabase(this.databaseUrl(name), maintenance);
    this.databases.add(`${this.prefix}${name}`);
    if (this.options.transport.kind === 'postgres') {
      await ensureDatabase(this.busUrl, maintenance);
      this.databases.add(`${this.prefix}bus`);
    }
    const run = await this.xtask(['migrate', name], env);
    if (run.code !== 0) throw new Error(`xtask migrate ${name} exited with ${run.code}: ${run.stdout}${run.stderr}`);
  }

  /**
   * Migrate (once) and start a service process under the supervisor; resolves when it is up.
   * `settings` are its own keys (`EVENT_PRUNE_EVERY_TICKS`, ...), over the devstack's values.
   */
  async start(name: ServiceName, settings: Readonly<Record<string, string>> = {}, options: { readonly wait?: boolean } = {}): Promise<FaultService> {
    const env = await this.env(name, settings);
    if (!this.databases.has(`${this.prefix}${name}`)) await this.migrate(name, env);
    const replica = this.services.filter((s) => s.name === name).length + 1;
    const label = replica === 1 ? name : `${name}#${replica}`;
    const port = Number(env[`${SERVICE_PROFILES[name].envPrefix}HTTP_PORT`]);
    const supervisor = new SupervisedService({
      name: label,
      root: this.options.root,
      mainFile: join(this.options.root, 'services', name, 'src', 'main.ts'),
      env,
      logFile: join(this.options.logDir, `${this.options.scenario}.${label.replace('#', '-')}.log`),
      port,
      // A fault scenario kills on purpose, many times: restart quickly, and keep restarting.
      maxRestarts: 50,
      backoffMs: 250,
      readyTimeoutMs: 90_000,
      onEvent: (line) => this.options.progress(`${label}: ${line}`),
      onReady: () => undefined,
    });
    const service: FaultService = {
      name,
      supervisor,
      url: supervisor.url,
      env,
      pid() {
        const pid = supervisor.pid;
        if (pid === undefined) throw new Error(`${label} has no process`);
        return pid;
      },
      kill(signal) {
        const pid = this.pid();
        process.kill(pid, signal);
        return pid;
      },
      async up(timeoutMs = 90_000) {
        await waitFor(`${label} up`, () => supervisor.status === 'up', { timeoutMs });
      },
      async metrics() {
        const res = await fetch(`${supervisor.url}/metrics`, { signal: AbortSignal.timeout(5000) });
        return parsePrometheusText(await res.text());
      },
      async log() {
        const text = await readFile(supervisor.options.logFile, 'utf8').catch(() => '');
        return text.split('\n').flatMap((line) => {
          if (!line.startsWith('{')) return [];
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
      },
      async request(method, path, body) {
        const res = await fetch(`${supervisor.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${FAULT_ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(120_000),
        });
        const text = await res.text();
        return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
      },
      async call<T>(method: string, path: string, body?: unknown): Promise<T> {
        const res = await this.request(method, path, body);
        if (res.status < 200 || res.status > 299) throw new Error(`${label}: ${method} ${path}: HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        return res.body as T;
      },
      stop: (timeoutMs) => supervisor.stop(timeoutMs),
    };
    this.services.push(service);
    supervisor.start();
    if (options.wait !== false) await service.up();
    return service;
  }

  /** Run an xtask command in process with a service's environment: its exit code and output. */
  async xtask(argv: readonly string[], env: Readonly<Record<string, string>>): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> {
    const stdout = capture();
    const stderr = capture();
    const code = await runXtask(argv, { env, stdout, stderr, root: this.options.root });
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  }

  /** Stop every service (SIGTERM, then SIGKILL), close the pools, drop the databases. */
  async close(): Promise<void> {
    await Promise.all(this.services.map((s) => s.stop(20_000)));
    await Promise.all([...this.pools.values()].map((p) => p.end({ timeout: 5 })));
    this.pools.clear();
    // A server killed by the scenario may take a moment to accept connections again.
    for (let i = 0; ; i++) {
      try {
        await dropDatabases(this.options.serverUrl, [...this.databases]);
        return;
      } catch (error) {
        if (i >= 10) throw error;
        await sleep(1000);
      }
    }
  }
}

/** The value of the first sample named `name` whose labels include `labels` (0 when absent). */
export function sampleValue(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}
