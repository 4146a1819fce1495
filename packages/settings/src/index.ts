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
/** Where the secrets of settings are (secret settings, URL passwords), and their values, for a logger to keep out of its lines. */
export { secretSettingPaths, secretValues, urlPassword, type SecretSettingPaths } from './secrets.ts';
/** The retention window's upper bound, and the shortest admin token the loader accepts. */
export { MAX_RETENTION_DAYS, MIN_ADMIN_TOKEN_LENGTH } from './internal/values.ts';
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
