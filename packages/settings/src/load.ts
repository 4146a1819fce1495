import { SettingsError, type SettingsIssue } from './errors.ts';
import type { SettingDef } from './internal/defs.ts';
import { closest } from './internal/levenshtein.ts';
import { allKnownKeys, isServiceName, SERVICE_PROFILES, type ServiceName, type ServiceProfile } from './profiles.ts';
import type { ServiceSettings, SettingsFor, SettingsPart, SettingsParts } from './types.ts';

export type Env = Readonly<Record<string, string | undefined>>;

const FLEET_PREFIX = 'CRAIG__';

interface Resolved {
  readonly def: SettingDef;
  readonly variable: string;
  readonly raw: string | undefined;
  readonly fromDefault: boolean;
}

/**
 * Load, validate and freeze a service's settings from the environment.
 *
 * Each key is read from `CRAIG_<SVC>__<KEY>`, else the fleet default `CRAIG__<KEY>`, else the
 * setting's default. Nothing is coerced: a value that is not exactly what the setting means is
 * refused. Every problem is reported at once in a `SettingsError`.
 */
export function loadServiceSettings<S extends ServiceName>(service: S, env?: Env): SettingsFor<S>;
export function loadServiceSettings(service: ServiceProfile, env?: Env): ServiceSettings;
// eslint-disable-next-line no-restricted-properties -- the documented default; callers in libraries pass env explicitly
export function loadServiceSettings(service: ServiceName | ServiceProfile, env: Env = process.env): ServiceSettings {
  const profile = typeof service === 'string' ? profileOf(service) : service;
  return load(profile, env, () => true) as unknown as ServiceSettings;
}

/**
 * Load only some parts of a service's settings: what a tool needs (`pnpm xtask prune` needs the
 * database URL and the windows, not the admin token or the bus URL). The parts asked for are
 * read, validated and cross-checked exactly as {@link loadServiceSettings} does (the dedup
 * horizon when both windows are loaded, the credential pair with the object store); the others
 * are neither required nor parsed. Unknown keys are still refused against the whole profile, so
 * a typo never passes because the tool did not need that part.
 */
export function loadSettingsParts<K extends SettingsPart>(service: ServiceName | ServiceProfile, env: Env, parts: readonly K[]): SettingsParts<K> {
  const profile = typeof service === 'string' ? profileOf(service) : service;
  const wanted = new Set<SettingsPart>(parts);
  return load(profile, env, (def) => wanted.has(partOf(def))) as unknown as SettingsParts<K>;
}

/**
 * The variable a setting of `service` is read from in `env`, its raw value, and whether that is
 * the default: what a tool names when it reports a value (a fleet check, say).
 */
export function settingSource(service: ServiceName | ServiceProfile, key: string, env: Env): SettingSource {
  const profile = typeof service === 'string' ? profileOf(service) : service;
  const def = profile.defs.find((d) => d.key === key);
  if (!def) throw new TypeError(`service ${profile.name} has no setting ${key}`);
  const { variable, raw, fromDefault } = resolve(profile, def, env);
  return { variable, raw, fromDefault };
}

/** Where a setting's value comes from (see {@link settingSource}). */
export interface SettingSource {
  /** `CRAIG_<SVC>__<KEY>` or `CRAIG__<KEY>` when set there; `CRAIG_<SVC>__<KEY>` when defaulted or unset. */
  readonly variable: string;
  readonly raw: string | undefined;
  readonly fromDefault: boolean;
}

/** The part of the settings a def belongs to: its top-level key, or `objectStore` for `archive.objectStore.*`. */
function partOf(def: SettingDef): SettingsPart {
  if (def.path.startsWith('archive.objectStore.')) return 'objectStore';
  return def.path.split('.')[0] as SettingsPart;
}

function load(profile: ServiceProfile, env: Env, include: (def: SettingDef) => boolean): Record<string, unknown> {
  const issues: SettingsIssue[] = [...unknownKeys(profile, env)];
  const defs = profile.defs.filter(include);
  const resolved = defs.map((def) => resolve(profile, def, env));
  const values = new Map<string, unknown>();

  for (const r of resolved) {
    if (r.raw === undefined) {
      if (!r.def.optional) issues.push(issue(r, 'is required'));
      continue;
    }
    const parsed = r.def.schema.safeParse(r.raw);
    if (parsed.success) {
      values.set(r.def.key, parsed.data);
    } else {
      for (const zi of parsed.error.issues) issues.push(issue(r, zi.message));
    }
  }

  const byKey = new Map(resolved.map((r) => [r.def.key, r]));
  issues.push(...crossFieldIssues(profile, values, byKey));
  if (issues.length > 0) throw new SettingsError(profile.name, issues);
  return deepFreeze(assemble(profile, defs, values));
}

function profileOf(name: string): ServiceProfile {
  if (!isServiceName(name)) {
    const suggestion = closest(name, Object.keys(SERVICE_PROFILES));
    throw new SettingsError(name, [
      { path: 'service', variable: 'service', value: name, message: `is not a craig service${suggestion ? ` (did you mean "${suggestion}"?)` : ''}` },
    ]);
  }
  return SERVICE_PROFILES[name];
}

function resolve(profile: ServiceProfile, def: SettingDef, env: Env): Resolved {
  const own = profile.envPrefix + def.key;
  if (env[own] !== undefined) return { def, variable: own, raw: env[own], fromDefault: false };
  const fleet = FLEET_PREFIX + def.key;
  if (env[fleet] !== undefined) return { def, variable: fleet, raw: env[fleet], fromDefault: false };
  return { def, variable: own, raw: def.default, fromDefault: def.default !== undefined };
}

/** A typo in a retention knob must never fall back to a default: unknown keys are errors. */
function unknownKeys(profile: ServiceProfile, env: Env): SettingsIssue[] {
  const own = new Set(profile.defs.map((d) => d.key));
  const secretKeys = new Set(Object.values(SERVICE_PROFILES).flatMap((p) => p.defs).concat(profile.defs).filter((d) => d.secret === true).map((d) => d.key));
  const fleetKnown = new Set(allKnownKeys());
  for (const d of profile.defs) fleetKnown.add(d.key);
  const issues: SettingsIssue[] = [];
  for (const [name, value] of Object.entries(env)) {
    let key: string;
    let known: Set<string>;
    if (name.startsWith(profile.envPrefix)) {
      key = name.slice(profile.envPrefix.length);
      known = own;
    } else if (name.startsWith(FLEET_PREFIX)) {
      // Fleet keys may belong to other services (the archive keys, say); only a key no
      // service knows is a typo.
      key = name.slice(FLEET_PREFIX.length);
      known = fleetKnown;
    } else {
      continue;
    }
    if (known.has(key)) continue;
    const suggestion = closest(key, [...known]);
    const prefix = name.slice(0, name.length - key.length);
    issues.push({
      path: 'env',
      variable: name,
      value: redactUnknown(value, key, suggestion, secretKeys),
      message: `is not a setting of ${known === own ? `service "${profile.name}"` : 'any craig service'}${suggestion ? ` (did you mean ${prefix}${suggestion}?)` : ''}`,
    });
  }
  return issues;
}

function crossFieldIssues(profile: ServiceProfile, values: Map<string, unknown>, byKey: Map<string, Resolved>): SettingsIssue[] {
  const issues: SettingsIssue[] = [];
  const at = (key: string) => byKey.get(key)!;

  // The dedup horizon (seed 000 §D3.1): an inbox record must outlive the replayable outbox row
  // by more than the prune cadence plus clock skew between two databases; one day covers both.
  const outbox = values.get('EVENT_OUTBOX_RETENTION_DAYS');
  const inbox = values.get('EVENT_INBOX_RETENTION_DAYS');
  if (typeof outbox === 'number' && typeof inbox === 'number' && outbox > 0 && inbox > 0 && inbox < outbox + 1) {
    const o = at('EVENT_OUTBOX_RETENTION_DAYS');
    const i = at('EVENT_INBOX_RETENTION_DAYS');
    issues.push({
      path: 'retention.inboxDays',
      variable: i.variable,
      value: i.raw,
      message: `must be at least ${o.variable} + 1 = ${outbox + 1} (${o.variable}=${JSON.stringify(o.raw)}${o.fromDefault ? ' by default' : ''}): an inbox dedup record must outlive every replayable outbox row`,
    });
  }

  const transport = values.get('TRANSPORT');
  if (transport === 'rabbitmq' && !values.has('AMQP_URL') && at('AMQP_URL').raw === undefined) {
    issues.push(issue(at('AMQP_URL'), 'is required when TRANSPORT=rabbitmq'));
  }
  if (transport === 'postgres' && !values.has('BUS_DATABASE_URL') && at('BUS_DATABASE_URL').raw === undefined) {
    issues.push(issue(at('BUS_DATABASE_URL'), 'is required when TRANSPORT=postgres (the bus database shared by the fleet)'));
  }

  if (profile.archive && byKey.has('OBJECT_STORE_ACCESS_KEY_ID')) {
    const id = at('OBJECT_STORE_ACCESS_KEY_ID');
    const secret = at('OBJECT_STORE_SECRET_ACCESS_KEY');
    if ((id.raw === undefined) !== (secret.raw === undefined)) {
      const missing = id.raw === undefined ? id : secret;
      issues.push(issue(missing, `must be set together with ${(missing === id ? secret : id).variable}`));
    }
  }
  return issues;
}

function issue(r: Resolved, message: string): SettingsIssue {
  return {
    path: r.def.path,
    variable: r.variable,
    value: r.raw === undefined ? undefined : redact(r.def, r.raw),
    message: r.fromDefault ? `${message} (default)` : message,
  };
}

function redact(def: SettingDef, raw: string): string {
  if (def.secret) return `<redacted, ${raw.length} characters>`;
  return redactUrlPassword(raw);
}

/**
 * An unknown key might be a misspelt secret (`ADMIN_TOKN`): its value is shown only when it is
 * clearly harmless (digits, a boolean), or when neither its name nor the key it is closest to
 * says secret; then cut to 64 characters with any URL password masked.
 */
function redactUnknown(raw: string | undefined, key: string, suggestion: string | undefined, secretKeys: ReadonlySet<string>): string | undefined {
  if (raw === undefined) return undefined;
  if (/^[0-9]{1,6}$|^(true|false)$/.test(raw)) return raw;
  if (SECRET_WORD.test(key) || (suggestion !== undefined && secretKeys.has(suggestion))) return `<redacted, ${raw.length} characters>`;
  return redactUrlPassword(raw.length > 64 ? `${raw.slice(0, 61)}...` : raw);
}

const SECRET_WORD = /TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;

// `scheme://user:password@`: the userinfo of a URL the WHATWG parser refuses (a bad port, a
// space) still carries the password in plain text.
const USERINFO_PASSWORD = /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:@/]*:)[^\s@/]*@/gi;

function redactUrlPassword(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) {
      url.password = '***';
      return url.toString();
    }
  } catch {
    // not a URL the parser accepts: mask a userinfo password by its shape
  }
  return raw.replace(USERINFO_PASSWORD, '$1***@');
}

function assemble(profile: ServiceProfile, defs: readonly SettingDef[], values: Map<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { service: profile.name };
  for (const def of defs) setPath(out, def.path, values.get(def.key));
  const t = out.transport as Record<string, unknown> | undefined;
  if (t) {
    out.transport =
      t.kind === 'rabbitmq'
        ? { kind: 'rabbitmq', amqpUrl: t.amqpUrl, exchange: t.exchange }
        : { kind: 'postgres', busDatabaseUrl: t.busDatabaseUrl, exchange: t.exchange };
  }
  if (!profile.archive) delete out.archive;
  if (!profile.cleanup) delete out.cleanup;
  return out;
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node = (node[part] ??= {}) as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
