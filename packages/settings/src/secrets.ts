// Where the secrets of a service's settings are, so a logger can keep them out of every line:
// settings marked `secret` (the admin token, the S3 secret key) are secret whole; every URL
// setting (database, bus, AMQP, S3 endpoint) may carry a password in its userinfo.
import type { SettingDef } from './internal/defs.ts';
import { amqpUrl, httpUrl, postgresUrl } from './internal/values.ts';
import { SERVICE_PROFILES, type ServiceProfile } from './profiles.ts';

const URL_SCHEMAS: ReadonlySet<unknown> = new Set([postgresUrl, amqpUrl, httpUrl]);

/** A URL setting: its value is shown with the password masked, never whole-redacted. */
export function isUrlSetting(def: SettingDef): boolean {
  return URL_SCHEMAS.has(def.schema);
}

export interface SecretSettingPaths {
  /** Dotted paths in the typed settings whose whole value is secret (`adminToken`, `archive.objectStore.secretAccessKey`). */
  readonly whole: readonly string[];
  /** Dotted paths of URL settings, whose password is secret (`databaseUrl`, `transport.amqpUrl`). */
  readonly urls: readonly string[];
}

/** The secret paths of the given profiles' settings (default every built-in profile). */
export function secretSettingPaths(profiles: readonly ServiceProfile[] = Object.values(SERVICE_PROFILES)): SecretSettingPaths {
  const whole = new Set<string>();
  const urls = new Set<string>();
  for (const def of profiles.flatMap((p) => p.defs)) {
    if (def.secret === true) whole.add(def.path);
    else if (isUrlSetting(def)) urls.add(def.path);
  }
  return { whole: [...whole], urls: [...urls] };
}

/** The password of a URL (percent-decoded as a client would send it), when it has one. */
export function urlPassword(raw: string): string | undefined {
  try {
    const password = new URL(raw).password;
    if (password === '') return undefined;
    try {
      return decodeURIComponent(password);
    } catch {
      return password;
    }
  } catch {
    return undefined;
  }
}

function at(settings: object, path: string): unknown {
  let node: unknown = settings;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * The secret strings in loaded settings: the values of secret settings and the passwords of URL
 * settings, for a logger to scrub from every line it writes (`createLogger(…, { secrets })`).
 */
export function secretValues(settings: object, paths: SecretSettingPaths = secretSettingPaths()): string[] {
  const values = new Set<string>();
  for (const path of paths.whole) {
    const value = at(settings, path);
    if (typeof value === 'string' && value !== '') values.add(value);
  }
  for (const path of paths.urls) {
    const value = at(settings, path);
    const password = typeof value === 'string' ? urlPassword(value) : undefined;
    if (password !== undefined) {
      values.add(password);
      // As it appears inside the URL itself, percent-encoded.
      values.add(new URL(value as string).password);
    }
  }
  return [...values];
}
