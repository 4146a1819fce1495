import { isServiceName, SERVICE_PROFILES, type ServiceProfile, type ServiceSettings } from '@craig/settings';
import type { MigrationSet } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import { RETENTION_MIGRATIONS, type ArchiveSpec } from '@craig/retention';
import { inventoryMigrationSets } from '@craig/svc-inventory';
import { RULES_ARCHIVE_SPECS, rulesMigrationSets } from '@craig/svc-rules';
import { SECURITY_ARCHIVE_SPECS, securityMigrationSets } from '@craig/svc-security';

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
  readonly migrationSets: readonly MigrationSet[] | ((settings: ServiceSettings) => readonly MigrationSet[]);
  /** Present when the service archives: its specs in FK deletion order (`pnpm xtask archive`, `archive-fetch`). */
  readonly archive?: { readonly specs: readonly ArchiveSpec[] };
}

/** The entry's migration sets for these settings. */
export function migrationSetsOf(entry: ServiceEntry, settings: ServiceSettings): readonly MigrationSet[] {
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
    return { profile: SERVICE_PROFILES[name], migrationSets: (settings) => builtInMigrationSets(name, settings), ...(specs ? { archive: { specs } } : {}) };
  }
  return undefined;
}

/** The archive specs of a built-in service that archives, in FK deletion order. */
export function builtInArchiveSpecs(service: string): readonly ArchiveSpec[] | undefined {
  if (service === 'security') return SECURITY_ARCHIVE_SPECS;
  if (service === 'rules') return RULES_ARCHIVE_SPECS;
  return undefined;
}

export function knownServiceNames(): string[] {
  return [...new Set([...Object.keys(SERVICE_PROFILES), ...registry.keys()])];
}

// Platform sets each service applies before its own, in order. Every service has an outbox
// and an inbox (mq); the others are added per service.
export function builtInMigrationSets(service: string, settings: ServiceSettings): MigrationSet[] {
  // inventory: mq, `cleanup` (guarded by CLEANUP_ALLOWED_DATABASES), then its own `inventory`.
  if (service === 'inventory') return inventoryMigrationSets({ allowedDatabases: settings.cleanup?.allowedDatabases ?? [] });
  // security: mq, `retention` (the archive ledger), then its own `security`.
  if (service === 'security') return securityMigrationSets();
  // rules: mq, `retention` (the archive ledger), then its own `rules`.
  if (service === 'rules') return rulesMigrationSets();
  // The archiving services carry the archive ledger (`retention`) after mq.
  if (service === 'exchange') return [MQ_MIGRATIONS, RETENTION_MIGRATIONS];
  return [MQ_MIGRATIONS];
}
