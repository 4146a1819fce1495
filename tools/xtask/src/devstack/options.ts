import { resolve } from 'node:path';
import { SERVICE_NAMES, SERVICE_PROFILES, isServiceName } from '@craig/settings';
import { parseArgs, UsageError } from '../command.ts';
import { profilePort } from './env.ts';

/** A devstack flag with a value it cannot take: names the flag and the value (exit code 2 with the usage). */
export class DevstackOptionError extends UsageError {
  readonly code = 'devstack_bad_option';
  constructor(
    readonly option: string,
    readonly value: string,
    expected: string,
  ) {
    super(`--${option} ${JSON.stringify(value)}: ${expected}`);
  }
}

export interface DevstackOptions {
  /** Wipe the state directory (embedded cluster, S3 objects, logs, state.json) first. */
  readonly fresh: boolean;
  /** First HTTP port: service i of SERVICE_NAMES gets base + i; undefined keeps each profile's own port. */
  readonly portBase: number | undefined;
  readonly rabbitmq: boolean;
  /** Run this long once the stack is up, then stop and judge the run; undefined runs until interrupted. */
  readonly forSeconds: number | undefined;
  readonly quiet: boolean;
  /** Services to run (all built ones when undefined). */
  readonly only: readonly string[] | undefined;
  /** Absolute path of the state directory. */
  readonly stateDir: string;
  /** Aged rows seeded into each fresh service database. */
  readonly historyRows: number;
  /** Database names are `<prefix><service>` and `<prefix>bus`. */
  readonly dbPrefix: string;
  /** Seed of the demo traffic's random source. */
  readonly seed: number;
  /** Processes per service (each its own port, all on the service's database). */
  readonly replicas: number;
  /** Print a Prometheus config scraping the services' ports and exit (starts nothing). */
  readonly printScrapeConfig: boolean;
  /**
   * The status page's port: a number (0: any free port), 'off' (no page), or undefined for the
   * port just below the services' first ({@link statusPortOf}).
   */
  readonly statusPort?: number | 'off' | undefined;
}

export const DEFAULT_STATE_DIR = '.devstack';
export const DEFAULT_HISTORY_ROWS = 20_000;
export const DEFAULT_DB_PREFIX = 'craig_';
/** Most processes per service `--replicas` runs. */
export const MAX_REPLICAS = 4;

function whole(option: string, raw: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new DevstackOptionError(option, raw, `must be a whole number from ${min} to ${max}`);
  return Number(raw);
}

/** The services' own first port (7101, cases) when no --port-base moves them. */
export const DEFAULT_FIRST_SERVICE_PORT = Math.min(...SERVICE_NAMES.map((name) => profilePort(SERVICE_PROFILES[name])));

/**
 * The status page's port, or undefined for none: --status-port when given, else the port below
 * the services' first (7100, or N-1 with --port-base N), so one devstack's ports stay together.
 */
export function statusPortOf(options: Pick<DevstackOptions, 'statusPort' | 'portBase'>): number | undefined {
  if (options.statusPort === 'off') return undefined;
  return options.statusPort ?? (options.portBase ?? DEFAULT_FIRST_SERVICE_PORT) - 1;
}

/** Parse `pnpm xtask devstack` arguments; `root` resolves a relative --state-dir. */
export function parseDevstackOptions(argv: readonly string[], root: string): DevstackOptions {
  const { positionals, flags, options } = parseArgs(argv, {
    flags: ['fresh', 'rabbitmq', 'quiet', 'print-scrape-config'],
    options: ['port-base', 'for', 'only', 'state-dir', 'history-rows', 'db-prefix', 'seed', 'replicas', 'status-port'],
  });
  if (positionals.length > 0) throw new UsageError(`devstack takes no positional arguments, got ${JSON.stringify(positionals[0])}`);
  const get = (name: string) => options.get(name);

  const replicasRaw = get('replicas');
  const replicas = replicasRaw === undefined ? 1 : whole('replicas', replicasRaw, 1, MAX_REPLICAS);
  const portBaseRaw = get('port-base');
  // From 1025: the status page takes the port below the first.
  const portBase = portBaseRaw === undefined ? undefined : whole('port-base', portBaseRaw, 1025, 65535 - SERVICE_NAMES.length * replicas);
  const statusRaw = get('status-port');
  let statusPort: number | 'off' | undefined;
  if (statusRaw === 'off' || statusRaw === '0') statusPort = statusRaw === 'off' ? 'off' : 0;
  else if (statusRaw !== undefined) {
    if (!/^[0-9]+$/.test(statusRaw) || Number(statusRaw) < 1024 || Number(statusRaw) > 65535) throw new DevstackOptionError('status-port', statusRaw, 'must be a port from 1024 to 65535, 0 (any free port) or off');
    statusPort = Number(statusRaw);
  }
  const forRaw = get('for');
  const forSeconds = forRaw === undefined ? undefined : whole('for', forRaw, 1, 7 * 86_400);

  let only: string[] | undefined;
  const onlyRaw = get('only');
  if (onlyRaw !== undefined) {
    only = onlyRaw.split(',').map((s) => s.trim());
    for (const name of only) {
      if (!isServiceName(name)) throw new DevstackOptionError('only', onlyRaw, `"${name}" is not a craig service (${SERVICE_NAMES.join(', ')})`);
    }
    if (only.length === 0) throw new DevstackOptionError('only', onlyRaw, 'must name at least one service');
  }

  const stateDirRaw = get('state-dir') ?? DEFAULT_STATE_DIR;
  if (stateDirRaw.trim() === '') throw new DevstackOptionError('state-dir', stateDirRaw, 'must be a directory path');
  const dbPrefix = get('db-prefix') ?? DEFAULT_DB_PREFIX;
  // With the longest service name and "bus", the name stays within PostgreSQL's 63 bytes.
  if (!/^[a-z_][a-z0-9_]{0,39}$/.test(dbPrefix)) throw new DevstackOptionError('db-prefix', dbPrefix, 'must be 1–40 of a-z, 0-9 and _, not starting with a digit');

  const historyRaw = get('history-rows');
  const seedRaw = get('seed');
  return {
    fresh: flags.has('fresh'),
    portBase,
    rabbitmq: flags.has('rabbitmq'),
    forSeconds,
    quiet: flags.has('quiet'),
    only,
    stateDir: resolve(root, stateDirRaw),
    historyRows: historyRaw === undefined ? DEFAULT_HISTORY_ROWS : whole('history-rows', historyRaw, 0, 10_000_000),
    dbPrefix,
    seed: seedRaw === undefined ? 1 : whole('seed', seedRaw, 0, 2 ** 31 - 2),
    replicas,
    printScrapeConfig: flags.has('print-scrape-config'),
    statusPort,
  };
}
