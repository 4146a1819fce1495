// The environment each service process gets, generated from its settings profile: the
// devstack's own values (databases, port, token, transport, object store, short cadences)
// under the user's settings, which win. Pure functions: stack.ts does the I/O.
import { SERVICE_NAMES, type ServiceProfile } from '@craig/settings';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where the devstack's databases live: an embedded cluster, or a server the user named. */
export type ServerChoice = { readonly kind: 'embedded' } | { readonly kind: 'external'; readonly url: string; readonly variable: 'CRAIG__DATABASE_URL' | 'DATABASE_URL' };

/** Devstack defaults that differ from production (a sweep within a minute, not an hour). */
export const DEVSTACK_PRUNE_EVERY_TICKS = 20;
export const DEVSTACK_ARCHIVE_EVERY_MINUTES = 1;
/**
 * The archiving services' first timed cycle 20–40 s after their runner starts (production:
 * 5–10 min): the runner starts just before the service listens, and its aged history is seeded
 * within a few seconds of its first ready, so the first cycle finds it, within the devstack's
 * first minute and within a `--for 45` run, with no cycle to ask for.
 */
export const DEVSTACK_ARCHIVE_FIRST_CYCLE_DELAY_SECONDS = 20;
export const DEVSTACK_BUCKET = 'craig-devstack';

/**
 * `CRAIG__DATABASE_URL`, else `DATABASE_URL`, names a PostgreSQL server (its database is where
 * the devstack connects to create the others); neither means an embedded cluster.
 */
export function chooseServer(env: Env): ServerChoice {
  if (env.CRAIG__DATABASE_URL) return { kind: 'external', url: env.CRAIG__DATABASE_URL, variable: 'CRAIG__DATABASE_URL' };
  if (env.DATABASE_URL) return { kind: 'external', url: env.DATABASE_URL, variable: 'DATABASE_URL' };
  return { kind: 'embedded' };
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** The database a URL names. */
export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

/** Whether a service's database (or the bus) needs the devstack's server: no URL of its own was given. */
export function needsServer(profiles: readonly ServiceProfile[], env: Env, rabbitmq: boolean): boolean {
  const ownDb = profiles.every((p) => env[`${p.envPrefix}DATABASE_URL`]);
  const bus = rabbitmq || env.CRAIG__BUS_DATABASE_URL !== undefined || profiles.every((p) => env[`${p.envPrefix}BUS_DATABASE_URL`]);
  return !(ownDb && bus);
}

export interface StackInfra {
  /** Admin URL of the devstack's server (embedded or external); undefined when every URL was given. */
  readonly serverUrl: string | undefined;
  readonly dbPrefix: string;
  readonly adminToken: string;
  /**
   * The password of every service's runtime login on the devstack's server (kept in
   * state.json, like the admin token). The server's own login migrates and owns the tables.
   */
  readonly runtimePassword: string;
  readonly portBase: number | undefined;
  readonly transport: { readonly kind: 'postgres' } | { readonly kind: 'rabbitmq'; readonly amqpUrl: string };
  /** The S3 server the devstack started; undefined when the user's settings name their own store. */
  readonly objectStore: { readonly endpoint: string; readonly region: string; readonly bucket: string; readonly accessKeyId: string; readonly secretAccessKey: string } | undefined;
}

/** `CRAIG_<SVC>__<KEY>` if set, else `CRAIG__<KEY>`: what the user said for this service. */
function userValue(profile: ServiceProfile, key: string, env: Env, fleet = true): string | undefined {
  return env[profile.envPrefix + key] ?? (fleet ? env[`CRAIG__${key}`] : undefined);
}

function derived(infra: StackInfra, database: string): string {
  if (!infra.serverUrl) throw new Error(`no PostgreSQL server for database ${database}: set CRAIG__DATABASE_URL or leave it unset for the embedded cluster`);
  return withDatabase(infra.serverUrl, database);
}

/** The service's runtime role: the user's `RUNTIME_ROLE`, else its profile's default. */
export function runtimeRoleOf(profile: ServiceProfile, env: Env): string {
  return userValue(profile, 'RUNTIME_ROLE', env) ?? profile.defs.find((d) => d.key === 'RUNTIME_ROLE')!.default!;
}

/**
 * The service's two logins (docs/adr/063-runtime-roles.md). Its own `CRAIG_<SVC>__DATABASE_URL`
 * as given (with the user's MIGRATION_DATABASE_URL, if any); else `<prefix><service>` on the
 * devstack's server, migrated by the server's login and run as the runtime role, which logs
 * in with the devstack's runtime password.
 */
export function serviceDatabaseUrls(profile: ServiceProfile, infra: StackInfra, env: Env): { readonly databaseUrl: string; readonly migrationDatabaseUrl: string | undefined } {
  const own = userValue(profile, 'DATABASE_URL', env, false);
  if (own !== undefined) return { databaseUrl: own, migrationDatabaseUrl: userValue(profile, 'MIGRATION_DATABASE_URL', env, false) };
  const owner = derived(infra, `${infra.dbPrefix}${profile.name}`);
  const runtime = Object.assign(new URL(owner), { username: runtimeRoleOf(profile, env), password: infra.runtimePassword }).toString();
  return { databaseUrl: runtime, migrationDatabaseUrl: userValue(profile, 'MIGRATION_DATABASE_URL', env, false) ?? owner };
}

/** The service's database URL as its runtime login (see {@link serviceDatabaseUrls}). */
export function serviceDatabaseUrl(profile: ServiceProfile, infra: StackInfra, env: Env): string {
  return serviceDatabaseUrls(profile, infra, env).databaseUrl;
}

/** The bus database URL: `CRAIG_<SVC>__BUS_DATABASE_URL` / `CRAIG__BUS_DATABASE_URL` as given, else `<prefix>bus`. */
export function busDatabaseUrl(profile: ServiceProfile, infra: StackInfra, env: Env): string {
  return userValue(profile, 'BUS_DATABASE_URL', env) ?? derived(infra, `${infra.dbPrefix}bus`);
}

/** The service's own port from its profile (HTTP_PORT's default). */
export function profilePort(profile: ServiceProfile): number {
  return Number(profile.defs.find((d) => d.key === 'HTTP_PORT')?.default ?? 0);
}

/**
 * The port a service listens on in the devstack: the user's HTTP_PORT (own key, then fleet key),
 * else `--port-base` + its index in SERVICE_NAMES, else its profile's port.
 */
export function servicePort(profile: ServiceProfile, portBase: number | undefined, env: Env): string {
  const index = (SERVICE_NAMES as readonly string[]).indexOf(profile.name);
  return userValue(profile, 'HTTP_PORT', env) ?? String(portBase === undefined || index < 0 ? profilePort(profile) : portBase + index);
}

/**
 * The service's settings as `CRAIG_<SVC>__<KEY>` variables: for every key of its profile, the
 * user's value (own key, then fleet key) if any, else the devstack's, else nothing (the
 * profile's default applies). The fleet `CRAIG__DATABASE_URL` names the server, not a database,
 * so it never becomes a service's DATABASE_URL. On the devstack's own server a service runs as
 * its runtime role and is migrated by the server's login (MIGRATION_DATABASE_URL), so anything
 * that starts it with this environment (the supervisor, replicas, fault scenarios) gets both.
 */
export function serviceEnv(profile: ServiceProfile, infra: StackInfra, env: Env): Record<string, string> {
  const { databaseUrl, migrationDatabaseUrl } = serviceDatabaseUrls(profile, infra, env);
  const store = infra.objectStore;
  const ours: Record<string, string | undefined> = {
    DATABASE_URL: databaseUrl,
    MIGRATION_DATABASE_URL: migrationDatabaseUrl,
    HTTP_PORT: servicePort(profile, infra.portBase, env),
    ADMIN_TOKEN: infra.adminToken,
    LOG_LEVEL: 'info',
    TRANSPORT: infra.transport.kind,
    BUS_DATABASE_URL: infra.transport.kind === 'postgres' ? busDatabaseUrl(profile, infra, env) : undefined,
    AMQP_URL: infra.transport.kind === 'rabbitmq' ? infra.transport.amqpUrl : undefined,
    EVENT_PRUNE_EVERY_TICKS: String(DEVSTACK_PRUNE_EVERY_TICKS),
    OBJECT_STORE_BACKEND: store ? 's3' : undefined,
    OBJECT_STORE_ENDPOINT: store?.endpoint,
    OBJECT_STORE_REGION: store?.region,
    OBJECT_STORE_BUCKET: store?.bucket,
    OBJECT_STORE_ACCESS_KEY_ID: store?.accessKeyId,
    OBJECT_STORE_SECRET_ACCESS_KEY: store?.secretAccessKey,
    OBJECT_STORE_FORCE_PATH_STYLE: store ? 'true' : undefined,
    ARCHIVE_EVERY_MINUTES: String(DEVSTACK_ARCHIVE_EVERY_MINUTES),
    ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: String(DEVSTACK_ARCHIVE_FIRST_CYCLE_DELAY_SECONDS),
    // The installer guard (ADR-060): the devstack's own database is the one allowed.
    CLEANUP_ALLOWED_DATABASES: databaseOf(databaseUrl),
  };
  const out: Record<string, string> = {};
  for (const def of profile.defs) {
    const value = def.key === 'DATABASE_URL' ? databaseUrl : def.key === 'MIGRATION_DATABASE_URL' ? migrationDatabaseUrl : (userValue(profile, def.key, env) ?? ours[def.key]);
    if (value !== undefined) out[profile.envPrefix + def.key] = value;
  }
  return out;
}

/**
 * The child process's whole environment: the parent's, without the fleet `CRAIG__DATABASE_URL`
 * (a server here, not a database), plus the service's generated variables.
 */
export function childEnv(env: Env, generated: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== 'CRAIG__DATABASE_URL') out[k] = v;
  return { ...out, ...generated };
}

/** RabbitMQ for `--rabbitmq`: `CRAIG__AMQP_URL`, else `AMQP_URL`, else the local broker. */
export function amqpUrlFrom(env: Env): string {
  return env.CRAIG__AMQP_URL ?? env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
}

/** Whether the user named their own object store (`CRAIG__OBJECT_STORE_ENDPOINT`): then no S3 server is started. */
export function userObjectStore(env: Env): boolean {
  return env.CRAIG__OBJECT_STORE_ENDPOINT !== undefined;
}
