/**
 * @craig/settings: typed, frozen service settings from `CRAIG_<SVC>__<KEY>` with fleet-wide
 * `CRAIG__<KEY>` defaults. Only a service's `main.ts` and xtask call the loader; libraries take
 * the typed result.
 */
export { loadServiceSettings, loadSettingsParts, settingSource, type Env, type SettingSource } from './load.ts';
export { SettingsError, formatIssue, type SettingsIssue } from './errors.ts';
export {
  SERVICE_NAMES,
  SERVICE_PROFILES,
  defineServiceProfile,
  isServiceName,
  type ArchiveServiceName,
  type ServiceName,
  type ServiceProfile,
  type ServiceProfileOptions,
} from './profiles.ts';
export { describeSettings, type SettingDoc } from './describe.ts';
export { MAX_RETENTION_DAYS } from './internal/values.ts';
/** One setting of a profile (what `defineServiceProfile({ extraDefs })` takes). */
export type { SettingDef } from './internal/defs.ts';
export type {
  ArchiveSettings,
  BaseSettings,
  CleanupSettings,
  LogLevel,
  ObjectStoreSettings,
  ReconcileSweepSettings,
  SendJobSettings,
  ServiceSettings,
  SettingsFor,
  SettingsPart,
  SettingsParts,
  TransportSettings,
} from './types.ts';
