import type { ArchiveServiceName } from './profiles.ts';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export type TransportSettings =
  | { readonly kind: 'postgres'; readonly busDatabaseUrl: string; readonly exchange: string }
  | { readonly kind: 'rabbitmq'; readonly amqpUrl: string; readonly exchange: string };

export interface ObjectStoreSettings {
  readonly backend: 's3' | 'garage';
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly bucket: string;
  readonly accessKeyId: string | undefined;
  readonly secretAccessKey: string | undefined;
  readonly forcePathStyle: boolean;
}

export interface ArchiveSettings {
  readonly hotWindowDays: number;
  readonly prefix: string;
  readonly everyMinutes: number;
  /** ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: the first timed cycle runs between this and twice this after start (a per-service phase). */
  readonly firstCycleDelaySeconds: number;
  readonly objectStore: ObjectStoreSettings;
}

export interface CleanupSettings {
  readonly allowedDatabases: readonly string[];
  readonly collectDeadlineMinutes: number;
  readonly jobRetentionDays: number;
}

/** The financial service's sweep of settled `subsidy_reconcile_queue` rows. */
export interface ReconcileSweepSettings {
  /** Days a settled row is kept after `settled_at`; 0 disables the sweep. */
  readonly settledRetentionDays: number;
}

/** The exchange service's terminal-state sweep of `exchange_send_jobs`. */
export interface SendJobSettings {
  /** Days a finished job is kept after `finished_at`; 0 disables the sweep. */
  readonly retentionDays: number;
}

/** Settings every service has. */
export interface BaseSettings {
  readonly service: string;
  /** The service's database as its runtime login. */
  readonly databaseUrl: string;
  /** The same database as the owner of its tables; undefined: DATABASE_URL's login migrates (single-user development). */
  readonly migrationDatabaseUrl: string | undefined;
  /** The role every runtime connection runs as (RUNTIME_ROLE). */
  readonly runtimeRole: string;
  readonly http: { readonly host: string; readonly port: number };
  readonly adminToken: string;
  readonly logLevel: LogLevel;
  readonly transport: TransportSettings;
  /** Transport-sweep windows in days; 0 disables that table's sweep. */
  readonly retention: { readonly outboxDays: number; readonly inboxDays: number };
  readonly outbox: {
    readonly maxAttempts: number;
    /** Outbox-worker ticks (1 s) between transport prune cycles (EVENT_PRUNE_EVERY_TICKS; 3600, hourly, by default). */
    readonly pruneEveryTicks: number;
    /** SWEEP_WAL_COMPRESSION: how the sweeps compress their own full-page images ('off': the server's setting); default lz4. */
    readonly sweepWalCompression: 'lz4' | 'zstd' | 'pglz' | 'off';
    /** DRAIN_WAL_COMPRESSION: how each outbox drain transaction compresses its full-page images ('off': the server's setting); default lz4. */
    readonly drainWalCompression: 'lz4' | 'zstd' | 'pglz' | 'off';
  };
  readonly inbox: {
    /** INBOX_MAX_RETRIES: retries of a handler that threw. */
    readonly maxRetries: number;
    /** INBOX_MAX_DELIVERIES: deliveries without an acknowledgement (the consumer died or timed out) before the dead letter. */
    readonly maxDeliveries: number;
  };
}

/** Settings of any profile: the optional sections are present when the profile has them. */
export interface ServiceSettings extends BaseSettings {
  readonly archive?: ArchiveSettings;
  readonly cleanup?: CleanupSettings;
  readonly reconcile?: ReconcileSweepSettings;
  readonly sendJobs?: SendJobSettings;
}

/** Settings of a built-in service, with the sections that service is known to have made required. */
export type SettingsFor<S extends string> = BaseSettings &
  (S extends ArchiveServiceName ? { readonly archive: ArchiveSettings } : unknown) &
  (S extends 'inventory' ? { readonly cleanup: CleanupSettings } : unknown) &
  (S extends 'financial' ? { readonly reconcile: ReconcileSweepSettings } : unknown) &
  (S extends 'exchange' ? { readonly sendJobs: SendJobSettings } : unknown);

/**
 * A part of the settings `loadSettingsParts` can load on its own: a top-level key of the typed
 * settings, except that `archive` leaves out the object store, which is the part `objectStore`.
 */
export type SettingsPart = Exclude<keyof ServiceSettings, 'service' | 'archive'> | 'archive' | 'objectStore';

type ArchivePart<K extends SettingsPart> = 'archive' extends K
  ? { readonly archive?: 'objectStore' extends K ? ArchiveSettings : Omit<ArchiveSettings, 'objectStore'> }
  : 'objectStore' extends K
    ? { readonly archive?: Pick<ArchiveSettings, 'objectStore'> }
    : unknown;

/**
 * What `loadSettingsParts(service, env, parts)` returns: the service name and the parts asked for
 * (the optional sections, archive, cleanup and the local sweeps, present when the profile has them).
 */
export type SettingsParts<K extends SettingsPart> = { readonly service: string } & Pick<ServiceSettings, Exclude<K, 'archive' | 'objectStore'>> & ArchivePart<K>;
