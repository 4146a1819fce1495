import type { ArchiveSettings } from '@craig/settings';
import type { ArchiveSpec } from '@craig/retention';
import { createObjectStore, type ObjectStore } from '@craig/store';
import type { Logger } from 'pino';
import { UsageError, type CommandContext } from './command.ts';
import { knownServiceNames, loadArchiveToolSettings, serviceEntry, type ToolSettings } from './services.ts';

/** What the archive commands need of a service: settings with an archive section, its specs, a store. */
export interface ArchiveContext {
  readonly service: string;
  /** The database, the windows and the archive with its object store (no admin token, HTTP or transport settings). */
  readonly settings: ToolSettings & { readonly archive: ArchiveSettings };
  readonly specs: readonly ArchiveSpec[];
  readonly store: ObjectStore;
}

export function archiveContext(ctx: CommandContext, name: string | undefined, logger: Logger, options: { requireSpecs: boolean }): ArchiveContext {
  if (!name) throw new UsageError('expected a service name');
  const entry = serviceEntry(name);
  if (!entry) throw new UsageError(`unknown service "${name}" (known: ${knownServiceNames().join(', ')})`);
  if (!entry.profile.archive) throw new UsageError(`service "${name}" does not archive (no archive settings in its profile)`);
  const settings = loadArchiveToolSettings(entry, ctx.env);
  const specs = entry.archive?.specs ?? [];
  if (options.requireSpecs && specs.length === 0) throw new UsageError(`no archive specs are registered for service "${name}"`);
  const store = createObjectStore(settings.archive!.objectStore, { signal: ctx.signal, logger });
  return { service: name, settings: settings as ArchiveContext['settings'], specs, store };
}
