import { isServiceName, SERVICE_PROFILES, type ServiceProfile } from '@craig/settings';
import type { MigrationSet } from '@craig/db';
import { RETENTION_MIGRATIONS, type ArchiveSpec } from '@craig/retention';

/**
 * What xtask knows about a service: its settings profile and the migration sets it applies,
 * in order (platform sets first, then its own). Built-in services are listed here; tests
 * register their own services to drive the commands against scratch databases.
 */
export interface ServiceEntry {
  readonly profile: ServiceProfile;
  readonly migrationSets: readonly MigrationSet[];
  /** Present when the service archives: its specs in FK deletion order (`pnpm xtask archive`, `archive-fetch`). */
  readonly archive?: { readonly specs: readonly ArchiveSpec[] };
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
  if (isServiceName(name)) return { profile: SERVICE_PROFILES[name], migrationSets: builtInMigrationSets(name) };
  return undefined;
}

export function knownServiceNames(): string[] {
  return [...new Set([...Object.keys(SERVICE_PROFILES), ...registry.keys()])];
}

// Platform sets each service applies before its own; filled in as the packages land (the
// mq set goes first when it lands). The archiving services carry the archive ledger.
function builtInMigrationSets(service: string): MigrationSet[] {
  return service === 'security' || service === 'rules' || service === 'exchange' ? [RETENTION_MIGRATIONS] : [];
}
