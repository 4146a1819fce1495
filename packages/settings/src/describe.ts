import { SERVICE_PROFILES, type ServiceProfile } from './profiles.ts';

/** One documented setting, as docs/config.md lists it. */
export interface SettingDoc {
  readonly key: string;
  readonly path: string;
  readonly description: string;
  readonly default: string | undefined;
  readonly required: boolean;
  readonly secret: boolean;
  /** Services whose profile has this key, with their default when it differs per service. */
  readonly services: ReadonlyArray<{ readonly service: string; readonly default: string | undefined }>;
}

/** Every setting of every built-in profile, in table order, for generated documentation. */
export function describeSettings(profiles: readonly ServiceProfile[] = Object.values(SERVICE_PROFILES)): SettingDoc[] {
  const docs = new Map<string, { doc: Omit<SettingDoc, 'services'>; services: { service: string; default: string | undefined }[] }>();
  for (const profile of profiles) {
    for (const def of profile.defs) {
      let entry = docs.get(def.key);
      if (!entry) {
        entry = {
          doc: { key: def.key, path: def.path, description: def.description, default: def.default, required: def.default === undefined && !def.optional, secret: def.secret === true },
          services: [],
        };
        docs.set(def.key, entry);
      }
      entry.services.push({ service: profile.name, default: def.default });
    }
  }
  return [...docs.values()].map(({ doc, services }) => ({ ...doc, services }));
}
