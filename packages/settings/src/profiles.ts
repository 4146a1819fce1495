import { archiveDefs, cleanupDefs, commonDefs, databaseRoleDefs, exchangeDefs, reconcileSweepDefs, type SettingDef } from './internal/defs.ts';

/** The eight services of the platform. */
export const SERVICE_NAMES = ['cases', 'placements', 'safety', 'security', 'rules', 'exchange', 'financial', 'inventory'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Services that archive audit-class tables to the object store. */
export type ArchiveServiceName = 'security' | 'rules' | 'exchange';

export interface ServiceProfileOptions {
  /** Lower-case service name; the env prefix is `CRAIG_<NAME>__` (dashes become underscores). */
  readonly name: string;
  readonly httpPort: number;
  /** Present when the service archives: its default and minimum hot window. */
  readonly archive?: { readonly defaultHotWindowDays: number; readonly minHotWindowDays: number };
  readonly cleanup?: boolean;
  /** Default of RUNTIME_ROLE; `craig_<name>_app` (dashes as underscores) unless given. */
  readonly runtimeRole?: string;
  /**
   * Settings only this service has (a service-local sweep's window, say), after the common,
   * archive and cleanup ones. A key another section already defines is refused.
   */
  readonly extraDefs?: readonly SettingDef[];
}

/** What a service reads from the environment. Built-in services have one each; tests may define their own. */
export interface ServiceProfile {
  readonly name: string;
  readonly envPrefix: string;
  readonly defs: readonly SettingDef[];
  readonly archive: boolean;
  readonly cleanup: boolean;
}

export function defineServiceProfile(options: ServiceProfileOptions): ServiceProfile {
  if (!/^[a-z][a-z0-9-]*$/.test(options.name)) {
    throw new TypeError(`service name must be lower-case letters, digits and dashes: ${JSON.stringify(options.name)}`);
  }
  const defs = [...commonDefs(options.httpPort), ...databaseRoleDefs(options.runtimeRole ?? `craig_${options.name.replaceAll('-', '_')}_app`)];
  if (options.archive) defs.push(...archiveDefs(options.archive.defaultHotWindowDays, options.archive.minHotWindowDays));
  if (options.cleanup) defs.push(...cleanupDefs());
  for (const extra of options.extraDefs ?? []) {
    if (defs.some((d) => d.key === extra.key || d.path === extra.path)) {
      throw new TypeError(`service ${options.name}: extra setting ${extra.key} (${extra.path}) clashes with a setting the profile already has`);
    }
    defs.push(extra);
  }
  return Object.freeze({
    name: options.name,
    envPrefix: `CRAIG_${options.name.toUpperCase().replaceAll('-', '_')}__`,
    defs: Object.freeze(defs),
    archive: options.archive !== undefined,
    cleanup: options.cleanup === true,
  });
}

const standardArchive = { defaultHotWindowDays: 90, minHotWindowDays: 1 };

/**
 * Built-in profiles. Exchange's hot window is at least 365 days (its SSA records, seed 003), and
 * it alone has SEND_JOB_RETENTION_DAYS (its terminal-state sweep of `exchange_send_jobs`).
 * Inventory's runtime role keeps the name its `cleanup` migrations created and granted to
 * before runtime roles were per service (`craig_inventory_runtime`): deployed databases hold
 * that role's grants, and migration files are never edited (docs/adr/063-runtime-roles.md).
 */
export const SERVICE_PROFILES: Readonly<Record<ServiceName, ServiceProfile>> = Object.freeze({
  cases: defineServiceProfile({ name: 'cases', httpPort: 7101 }),
  placements: defineServiceProfile({ name: 'placements', httpPort: 7102 }),
  safety: defineServiceProfile({ name: 'safety', httpPort: 7103 }),
  security: defineServiceProfile({ name: 'security', httpPort: 7104, archive: standardArchive }),
  rules: defineServiceProfile({ name: 'rules', httpPort: 7105, archive: standardArchive }),
  exchange: defineServiceProfile({ name: 'exchange', httpPort: 7106, archive: { defaultHotWindowDays: 365, minHotWindowDays: 365 }, extraDefs: exchangeDefs() }),
  financial: defineServiceProfile({ name: 'financial', httpPort: 7107, extraDefs: reconcileSweepDefs() }),
  inventory: defineServiceProfile({ name: 'inventory', httpPort: 7108, cleanup: true, runtimeRole: 'craig_inventory_runtime' }),
});

export function isServiceName(name: string): name is ServiceName {
  return (SERVICE_NAMES as readonly string[]).includes(name);
}

/** Every key any built-in profile knows: fleet defaults (`CRAIG__<KEY>`) must be one of these. */
export function allKnownKeys(): string[] {
  return [...new Set(Object.values(SERVICE_PROFILES).flatMap((p) => p.defs.map((d) => d.key)))];
}
