import { isServiceName, loadSettingsParts, SERVICE_PROFILES, type Env, type ServiceName, type ServiceProfile, type SettingsParts } from '@craig/settings';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS, type EventCatalog, type LocalSweepDefinition, type RetentionSpec } from '@craig/mq';
import type { ArchiveSpec } from '@craig/retention';
import { CASES_EVENTS, CASES_MIGRATION_SETS } from '@craig/svc-cases';
import { FINANCIAL_EVENTS, financialMigrationSets, reconcileRetentionSpecs, RECONCILE_SWEEP } from '@craig/svc-financial';
import { EXCHANGE_ARCHIVE_SPECS, EXCHANGE_EVENTS, exchangeMigrationSets, SEND_JOB_SWEEP, sendJobRetentionSpec } from '@craig/svc-exchange';
import { INVENTORY_EVENTS, inventoryMigrationSets } from '@craig/svc-inventory';
import { PLACEMENTS_EVENTS, PLACEMENTS_MIGRATION_SETS } from '@craig/svc-placements';
import { RULES_ARCHIVE_SPECS, RULES_EVENTS, rulesMigrationSets } from '@craig/svc-rules';
import { SAFETY_EVENTS, SAFETY_MIGRATION_SETS } from '@craig/svc-safety';
import { SECURITY_ARCHIVE_SPECS, SECURITY_EVENTS, securityMigrationSets } from '@craig/svc-security';

/** The settings parts the operator commands use: the database, the windows, the archive's hot window, cleanup and local sweeps. */
const TOOL_PARTS = ['databaseUrl', 'migrationDatabaseUrl', 'runtimeRole', 'retention', 'outbox', 'archive', 'cleanup', 'reconcile', 'sendJobs'] as const;

/**
 * What `migrate`, `prune`, `invariants` and the archive commands read of a service's settings:
 * its database URL, every retention window and the sweeps' settings, never the admin token, the HTTP or transport
 * keys (`loadSettingsParts`: those parts are not even required). The archive commands add
 * the object store.
 */
export type ToolSettings = SettingsParts<(typeof TOOL_PARTS)[number]>;

/** A service's {@link ToolSettings} from the environment, as the service would read them. */
export function loadToolSettings(entry: ServiceEntry, env: Env): ToolSettings {
  return loadSettingsParts(entry.profile, env, TOOL_PARTS);
}

/** {@link ToolSettings} plus the archive's object store (`pnpm xtask archive`, `archive-fetch`). */
export function loadArchiveToolSettings(entry: ServiceEntry, env: Env): SettingsParts<(typeof TOOL_PARTS)[number] | 'objectStore'> {
  return loadSettingsParts(entry.profile, env, [...TOOL_PARTS, 'objectStore']);
}

/** Every built-in service's declared events, in SERVICE_NAMES order: the fleet's subscription graph is built from these. */
export const BUILT_IN_EVENTS: Readonly<Record<ServiceName, EventCatalog>> = Object.freeze({
  cases: CASES_EVENTS,
  placements: PLACEMENTS_EVENTS,
  safety: SAFETY_EVENTS,
  security: SECURITY_EVENTS,
  rules: RULES_EVENTS,
  exchange: EXCHANGE_EVENTS,
  financial: FINANCIAL_EVENTS,
  inventory: INVENTORY_EVENTS,
});

/**
 * What xtask knows about a service: its settings profile and the migration sets it applies,
 * in order (platform sets first, then its own). Built-in services are listed here; tests
 * register their own services to drive the commands against scratch databases.
 */
export interface ServiceEntry {
  readonly profile: ServiceProfile;
  /**
   * The sets in order, or a function of the service's loaded settings when a set depends on
   * them (the cleanup installer guard takes its allow-list from CLEANUP_ALLOWED_DATABASES).
   */
  readonly migrationSets: readonly MigrationSet[] | ((settings: ToolSettings) => readonly MigrationSet[]);
  /** Present when the service archives: its specs in FK deletion order (`pnpm xtask archive`, `archive-fetch`). */
  readonly archive?: { readonly specs: readonly ArchiveSpec[] };
  /**
   * The service's own report-only invariants beyond the transport, archive and cleanup ones
   * (`pnpm xtask invariants <service>`), for its loaded settings.
   */
  readonly invariants?: (settings: ToolSettings) => readonly RetentionSpec[];
  /**
   * Service-local terminal-state sweeps beside the transport sweep, with their windows from the
   * settings (`pnpm xtask prune <service>` runs, previews and resumes them by name).
   */
  readonly localSweeps?: (settings: ToolSettings) => readonly LocalSweepOf[];
  /** What the service publishes and consumes (built-in services: their `<SVC>_EVENTS`); `pnpm xtask fleet check` reads it. */
  readonly events?: EventCatalog;
}

/** A service-local sweep (`runLocalSweep` from @craig/mq) and its window in days (0: disabled). */
export interface LocalSweepOf {
  readonly definition: LocalSweepDefinition;
  readonly windowDays: number;
}

/** The entry's local sweeps for these settings (none for most services). */
export function localSweepsOf(entry: ServiceEntry, settings: ToolSettings): readonly LocalSweepOf[] {
  return entry.localSweeps?.(settings) ?? [];
}

/** The entry's migration sets for these settings. */
export function migrationSetsOf(entry: ServiceEntry, settings: ToolSettings): readonly MigrationSet[] {
  return typeof entry.migrationSets === 'function' ? entry.migrationSets(settings) : entry.migrationSets;
}

const registry = new Map<string, ServiceEntry>();

/** Register (or replace) a service, e.g. a test's own. */
export function registerService(entry: ServiceEntry): void {
  registry.set(entry.profile.name, entry);
}

export function unregisterService(name: string): void {
  registry.delete(name);
}

/** The service entry, or `undefined` when xtask does not know it. */
export function serviceEntry(name: string): ServiceEntry | undefined {
  const registered = registry.get(name);
  if (registered) return registered;
  if (isServiceName(name)) {
    const specs = builtInArchiveSpecs(name);
    return {
      profile: SERVICE_PROFILES[name],
      migrationSets: (settings) => builtInMigrationSets(name, settings),
      ...(specs ? { archive: { specs } } : {}),
      events: BUILT_IN_EVENTS[name],
      ...(name === 'financial' ? financialExtras : {}),
      ...(name === 'exchange' ? exchangeExtras : {}),
    };
  }
  return undefined;
}

/** The archive specs of a built-in service that archives, in FK deletion order. */
export function builtInArchiveSpecs(service: string): readonly ArchiveSpec[] | undefined {
  if (service === 'security') return SECURITY_ARCHIVE_SPECS;
  if (service === 'exchange') return EXCHANGE_ARCHIVE_SPECS;
  if (service === 'rules') return RULES_ARCHIVE_SPECS;
  return undefined;
}

/** Financial's sweep of settled reconcile rows and its invariant. */
const financialExtras: Pick<ServiceEntry, 'invariants' | 'localSweeps'> = {
  invariants: (settings) => reconcileRetentionSpecs(settings.reconcile?.settledRetentionDays ?? 0),
  localSweeps: (settings) => [{ definition: RECONCILE_SWEEP, windowDays: settings.reconcile?.settledRetentionDays ?? 0 }],
};

/** Exchange's sweep of finished send jobs and its invariant. */
const exchangeExtras: Pick<ServiceEntry, 'invariants' | 'localSweeps'> = {
  invariants: (settings) => [sendJobRetentionSpec(settings.sendJobs?.retentionDays ?? 0)],
  localSweeps: (settings) => [{ definition: SEND_JOB_SWEEP, windowDays: settings.sendJobs?.retentionDays ?? 0 }],
};

export function knownServiceNames(): string[] {
  return [...new Set([...Object.keys(SERVICE_PROFILES), ...registry.keys()])];
}

// Platform sets each service applies before its own, in order. Every service has an outbox
// and an inbox (mq); the others are added per service.
export function builtInMigrationSets(service: string, settings: ToolSettings): MigrationSet[] {
  // inventory: mq, `cleanup` (guarded by CLEANUP_ALLOWED_DATABASES), then its own `inventory`.
  if (service === 'inventory') return inventoryMigrationSets({ allowedDatabases: settings.cleanup?.allowedDatabases ?? [] });
  // cases: mq, then its own `cases`.
  if (service === 'cases') return [...CASES_MIGRATION_SETS];
  // placements: mq, `case_refs` (from @craig/service), then its own `placements`.
  if (service === 'placements') return [...PLACEMENTS_MIGRATION_SETS];
  // safety: mq, `case_refs` (from @craig/service), then its own `safety`.
  if (service === 'safety') return [...SAFETY_MIGRATION_SETS];
  // security: mq, `retention` (the archive ledger), then its own `security`.
  if (service === 'security') return securityMigrationSets(archiveOf(settings));
  // financial: mq, then its own `financial` (the reconcile queue and subsidy imports).
  if (service === 'financial') return financialMigrationSets();
  // exchange: mq, `retention` (the archive ledger), then its own `exchange`.
  if (service === 'exchange') return exchangeMigrationSets(archiveOf(settings));
  // rules: mq, `retention` (the archive ledger), then its own `rules`.
  if (service === 'rules') return rulesMigrationSets(archiveOf(settings));
  return [MQ_MIGRATIONS];
}

/** An archiving service's archive settings (its profile makes them required). */
function archiveOf(settings: { readonly service: string; readonly archive?: { readonly hotWindowDays: number } | undefined }): { readonly hotWindowDays: number } {
  if (!settings.archive) throw new TypeError(`service ${settings.service} archives but its settings have no archive section`);
  return settings.archive;
}
