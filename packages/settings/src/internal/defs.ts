// The table of every setting: env key, where it lands in the typed settings, its parser,
// its raw default and its documentation. docs/config.md is generated from this table.
import type { z } from 'zod';
import * as v from './values.ts';

export interface SettingDef {
  /** Env key after the prefix: `CRAIG_<SVC>__<key>` or fleet-wide `CRAIG__<key>`. */
  readonly key: string;
  /** Dotted path in the typed settings object. */
  readonly path: string;
  readonly schema: z.ZodType<unknown, string>;
  readonly description: string;
  /** Raw default, parsed like any other value; `undefined` means required (unless `optional`). */
  readonly default?: string;
  /** Absent is fine and yields `undefined` (a cross-field rule may still require it). */
  readonly optional?: boolean;
  /** Redacted in error messages and docs. */
  readonly secret?: boolean;
}

const def = (d: SettingDef): SettingDef => d;

export function commonDefs(httpPort: number): SettingDef[] {
  return [
    def({ key: 'DATABASE_URL', path: 'databaseUrl', schema: v.postgresUrl, description: "URL of the service's own PostgreSQL database, as its runtime login (RUNTIME_ROLE)." }),
    def({ key: 'HTTP_HOST', path: 'http.host', schema: v.nonEmpty, default: '127.0.0.1', description: 'Interface the HTTP API binds to.' }),
    def({ key: 'HTTP_PORT', path: 'http.port', schema: v.port, default: String(httpPort), description: 'Port of the HTTP API (`/healthz`, `/readyz`, `/metrics`, `/v1/...`); 0 picks a free port.' }),
    def({ key: 'ADMIN_TOKEN', path: 'adminToken', schema: v.adminToken, secret: true, description: 'Bearer token for `/v1/admin/*` and the other admin routes (at least 32 characters; `openssl rand -base64 32`).' }),
    def({ key: 'LOG_LEVEL', path: 'logLevel', schema: v.logLevel, default: 'info', description: 'pino log level.' }),
    def({ key: 'TRANSPORT', path: 'transport.kind', schema: v.transportKind, default: 'postgres', description: 'Event transport: `postgres` (the bus database, zero-install default) or `rabbitmq`.' }),
    def({ key: 'BUS_DATABASE_URL', path: 'transport.busDatabaseUrl', schema: v.postgresUrl, optional: true, description: 'PostgreSQL bus database shared by the fleet; required when TRANSPORT=postgres.' }),
    def({ key: 'AMQP_URL', path: 'transport.amqpUrl', schema: v.amqpUrl, optional: true, secret: false, description: 'RabbitMQ URL; required when TRANSPORT=rabbitmq.' }),
    def({ key: 'AMQP_EXCHANGE', path: 'transport.exchange', schema: v.nonEmpty, default: 'craig.events', description: 'Topic exchange events are published to (RabbitMQ).' }),
    def({ key: 'EVENT_OUTBOX_RETENTION_DAYS', path: 'retention.outboxDays', schema: v.retentionDays, default: '30', description: 'Days a *published* outbox row is kept (pending and parked rows are never pruned). 0 disables the outbox sweep. Move it fleet-wide only.' }),
    def({ key: 'EVENT_INBOX_RETENTION_DAYS', path: 'retention.inboxDays', schema: v.retentionDays, default: '31', description: 'Days an inbox dedup record is kept; must be ≥ outbox + 1 when both are non-zero (the dedup horizon). 0 disables the inbox sweep.' }),
    def({ key: 'OUTBOX_MAX_ATTEMPTS', path: 'outbox.maxAttempts', schema: v.wholeNumber(1, 1000, 'attempts'), default: '10', description: 'Failed publish attempts after which an outbox row is parked (kept, never pruned, redriven by an operator).' }),
    def({
      key: 'EVENT_PRUNE_EVERY_TICKS',
      path: 'outbox.pruneEveryTicks',
      schema: v.wholeNumber(1, 604800, 'ticks'),
      default: '3600',
      description:
        'Outbox-worker ticks (1 s each) between transport prune cycles, from a per-service jitter; the service-local sweeps (exchange send jobs, financial reconcile queue) keep the same cadence. Production keeps the hourly default (3600); the devstack sets 20 so sweeps show within a minute.',
    }),
    def({
      key: 'SWEEP_WAL_COMPRESSION',
      path: 'outbox.sweepWalCompression',
      schema: v.walCompression,
      default: 'lz4',
      description:
        "How the transport prune (and inventory's cleanup runner) compress the full-page images of their own deletes (`wal_compression` on their sessions, ADR-069): `lz4`, `zstd`, `pglz`, or `off` for the server's setting. A server that compresses already keeps its method; the runtime role needs `SET ON PARAMETER wal_compression` (granted by the migration login when it is a superuser), else the sweeps run uncompressed and warn once.",
    }),
    def({
      key: 'DRAIN_WAL_COMPRESSION',
      path: 'outbox.drainWalCompression',
      schema: v.walCompression,
      default: 'lz4',
      description:
        "How each outbox drain transaction compresses the full-page images of the rows it locks and stamps (`SET LOCAL wal_compression`, ADR-086): `lz4`, `zstd`, `pglz`, or `off` for the server's setting. A backlog's rows were written before the last checkpoint, so the drain's first change to each page logs the whole page. A server that compresses already keeps its method; without `SET ON PARAMETER wal_compression` the runtime role drains uncompressed and warns once.",
    }),
    def({ key: 'INBOX_MAX_RETRIES', path: 'inbox.maxRetries', schema: v.wholeNumber(0, 100, 'retries'), default: '5', description: 'Handler retries before a message is dead-lettered.' }),
    def({
      key: 'INBOX_MAX_DELIVERIES',
      path: 'inbox.maxDeliveries',
      schema: v.wholeNumber(1, 100, 'deliveries'),
      default: '5',
      description:
        'Deliveries of one message without an acknowledgement (its consumer died or timed out holding it) after which it is dead-lettered instead of handed out again. Counted apart from INBOX_MAX_RETRIES: a handler that throws settles its delivery.',
    }),
  ];
}

export function archiveDefs(defaultHotWindowDays: number, minHotWindowDays: number): SettingDef[] {
  return [
    def({ key: 'OBJECT_STORE_BACKEND', path: 'archive.objectStore.backend', schema: v.objectStoreBackend, description: '`s3` (AWS, MinIO, R2, Ceph: honour `If-None-Match`) or `garage` (ignores it; every write is read back and verified). `local` is refused.' }),
    def({ key: 'OBJECT_STORE_ENDPOINT', path: 'archive.objectStore.endpoint', schema: v.httpUrl, optional: true, description: 'S3 endpoint URL; unset means AWS for the region.' }),
    def({ key: 'OBJECT_STORE_REGION', path: 'archive.objectStore.region', schema: v.nonEmpty, default: 'us-east-1', description: 'S3 region.' }),
    def({ key: 'OBJECT_STORE_BUCKET', path: 'archive.objectStore.bucket', schema: v.bucketName, description: 'Bucket holding the archive objects.' }),
    def({ key: 'OBJECT_STORE_ACCESS_KEY_ID', path: 'archive.objectStore.accessKeyId', schema: v.nonEmpty, optional: true, description: 'Access key id; set with the secret or neither (then the SDK default chain applies).' }),
    def({ key: 'OBJECT_STORE_SECRET_ACCESS_KEY', path: 'archive.objectStore.secretAccessKey', schema: v.nonEmpty, optional: true, secret: true, description: 'Secret access key.' }),
    def({ key: 'OBJECT_STORE_FORCE_PATH_STYLE', path: 'archive.objectStore.forcePathStyle', schema: v.strictBoolean, default: 'false', description: 'Path-style addressing (`true` for MinIO, Garage and most self-hosted servers).' }),
    def({ key: 'ARCHIVE_HOT_WINDOW_DAYS', path: 'archive.hotWindowDays', schema: v.wholeNumber(minHotWindowDays, 3650, 'days'), default: String(defaultHotWindowDays), description: `Rows younger than this stay hot; older rows at their fixpoint are archived then pruned (at least ${minHotWindowDays}).` }),
    def({ key: 'ARCHIVE_PREFIX', path: 'archive.prefix', schema: v.archivePrefix, default: 'archive', description: 'Key prefix: `<prefix>/<service>/<table>/<yyyy>/<mm>/<archive_id>.ndjson.gz`.' }),
    def({ key: 'ARCHIVE_EVERY_MINUTES', path: 'archive.everyMinutes', schema: v.wholeNumber(1, 10080, 'minutes'), default: '60', description: 'Minutes between archive cycles.' }),
    def({
      key: 'ARCHIVE_FIRST_CYCLE_DELAY_SECONDS',
      path: 'archive.firstCycleDelaySeconds',
      schema: v.wholeNumber(0, 86400, 'seconds'),
      default: '300',
      description:
        'The first timed archive cycle runs between this many seconds and twice as many after start, at a phase derived from the service name (FNV-1a, like the prune jitter: replicas of a service align, services spread); then every ARCHIVE_EVERY_MINUTES. 0 runs it at once.',
    }),
  ];
}

export function cleanupDefs(): SettingDef[] {
  return [
    def({ key: 'CLEANUP_ALLOWED_DATABASES', path: 'cleanup.allowedDatabases', schema: v.databaseAllowList, default: 'inventory', description: 'Comma-separated database names the cleanup schema may be installed into; a trailing `*` matches a suffix.' }),
    def({ key: 'CLEANUP_COLLECT_DEADLINE_MINUTES', path: 'cleanup.collectDeadlineMinutes', schema: v.wholeNumber(1, 10080, 'minutes'), default: '60', description: 'A collecting job older than this is cancelled so an abandoned sync cannot block its server.' }),
    def({ key: 'CLEANUP_JOB_RETENTION_DAYS', path: 'cleanup.jobRetentionDays', schema: v.wholeNumber(1, 3650, 'days'), default: '14', description: 'Days the manifests and step records of finished jobs are kept.' }),
  ];
}

/** The financial service's terminal-state sweep of settled `subsidy_reconcile_queue` rows. */
export function reconcileSweepDefs(): SettingDef[] {
  return [
    def({
      key: 'RECONCILE_SETTLED_RETENTION_DAYS',
      path: 'reconcile.settledRetentionDays',
      schema: v.retentionDays,
      default: '90',
      description: 'Days a *settled* `subsidy_reconcile_queue` row is kept after `settled_at` (pending, matched and failed rows are never swept). 0 disables the sweep.',
    }),
  ];
}

/** The exchange service's own terminal-state sweep of `exchange_send_jobs` (seed 000, service-local sweeps). */
export function exchangeDefs(): SettingDef[] {
  return [
    def({ key: 'SEND_JOB_RETENTION_DAYS', path: 'sendJobs.retentionDays', schema: v.retentionDays, default: '30', description: 'Days a finished (`sent`, `failed`, `cancelled`) `exchange_send_jobs` row is kept after `finished_at`; queued and sending jobs are never swept. 0 disables the sweep.' }),
  ];
}

/**
 * The two logins of a service's database (docs/adr/063-runtime-roles.md): the owner migrates and
 * grants; everything at runtime runs as the runtime role, which owns nothing.
 */
export function databaseRoleDefs(runtimeRole: string): SettingDef[] {
  return [
    def({
      key: 'MIGRATION_DATABASE_URL',
      path: 'migrationDatabaseUrl',
      schema: v.postgresUrl,
      optional: true,
      description:
        "The same database as DATABASE_URL, as the login that owns its tables: migrations, the runtime role and its grants are applied with it (at boot and by `pnpm xtask migrate`). Unset: DATABASE_URL's login migrates, a single-user development setup (warned at boot when that login owns the tables).",
    }),
    def({
      key: 'RUNTIME_ROLE',
      path: 'runtimeRole',
      schema: v.roleName,
      default: runtimeRole,
      description:
        "The role every runtime connection runs as (DATABASE_URL's login, else `SET ROLE` to it at connection start): created or corrected by the migration login, owning nothing, granted exactly what the service's code paths need (docs/security.md).",
    }),
  ];
}
