// Which of the eight services exist in this checkout, and their devstack demos. A service is a
// `services/<name>/` package; its `src/index.ts` may export `demo: ServiceDemo`. Imported by
// path, so a new service needs no change to xtask's dependencies.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ServiceDemo } from '@craig/service';
import { SERVICE_NAMES, SERVICE_PROFILES, type ServiceName, type ServiceProfile } from '@craig/settings';

export interface BuiltService {
  readonly name: ServiceName;
  readonly profile: ServiceProfile;
  readonly dir: string;
  readonly mainFile: string;
  readonly entryFile: string;
}

/** The services of SERVICE_NAMES with a `services/<name>/package.json` (built), and the others. */
export function discoverServices(root: string): { built: BuiltService[]; notBuilt: ServiceName[] } {
  const built: BuiltService[] = [];
  const notBuilt: ServiceName[] = [];
  for (const name of SERVICE_NAMES) {
    const dir = join(root, 'services', name);
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'src', 'main.ts'))) {
      built.push({ name, profile: SERVICE_PROFILES[name], dir, mainFile: join(dir, 'src', 'main.ts'), entryFile: join(dir, 'src', 'index.ts') });
    } else {
      notBuilt.push(name);
    }
  }
  return { built, notBuilt };
}

/** A service's exported `demo`, or why there is none usable. */
export async function loadDemo(service: BuiltService): Promise<{ demo: ServiceDemo } | { missing: string }> {
  if (!existsSync(service.entryFile)) return { missing: `no ${service.entryFile}` };
  const mod = (await import(pathToFileURL(service.entryFile).href)) as { demo?: unknown };
  const demo = mod.demo as Partial<ServiceDemo> | undefined;
  if (!demo || typeof demo !== 'object') return { missing: 'its src/index.ts exports no `demo`' };
  if (typeof demo.seedAgedHistory !== 'function' || !Array.isArray(demo.tables) || (demo.tick !== undefined && typeof demo.tick !== 'function')) {
    return { missing: 'its `demo` export is not a ServiceDemo (seedAgedHistory, tables, tick?)' };
  }
  return { demo: demo as ServiceDemo };
}
