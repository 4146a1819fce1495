import { secretSettingPaths } from '@craig/settings';
import pino, { type DestinationStream, type Logger } from 'pino';

export interface LoggerOptions {
  /**
   * Secret strings to scrub from every line, wherever they appear (a message, an error's
   * fields, a header): `secretValues(settings)` from `@craig/settings`. Strings shorter than 8
   * characters are left to the other two layers (masking them everywhere would mangle lines).
   */
  readonly secrets?: readonly string[];
  /** Where lines go (default stdout); tests pass a stream they read. */
  readonly destination?: DestinationStream;
}

const REDACTED = '[redacted]';
const MIN_SCRUBBED = 8;

// Layer 1, by path: the admin token however a request's headers are logged, and every secret
// setting (whole) or URL setting (its password) if settings are ever logged, as a whole object
// or under `settings`.
function redactPaths(): { paths: string[]; urlKeys: Set<string> } {
  const { whole, urls } = secretSettingPaths();
  const headers = ['req.headers.authorization', 'request.headers.authorization', 'headers.authorization', 'authorization'];
  const settings = [...whole, ...urls].flatMap((p) => [p, `settings.${p}`]);
  return { paths: [...headers, ...settings], urlKeys: new Set(urls.map((p) => p.split('.').at(-1)!)) };
}

// `scheme://user:password@`: a URL's password in any string of any line.
const USERINFO_PASSWORD = /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:@/"]*:)[^\s@/"]*@/gi;

function maskUrlPassword(value: unknown): unknown {
  return typeof value === 'string' ? value.replace(USERINFO_PASSWORD, '$1***@') : REDACTED;
}

/**
 * Layers 2 and 3, on the serialized line: every known secret (and its JSON-escaped form) is
 * replaced, and so is any URL password. This catches what no path can: a token inside an error
 * message, a connection string inside a driver's error.
 */
function scrubber(secrets: readonly string[]): (line: string) => string {
  const needles = [...new Set(secrets.filter((s) => s.length >= MIN_SCRUBBED).flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))].sort((a, b) => b.length - a.length);
  return (line) => {
    let out = line;
    for (const needle of needles) if (out.includes(needle)) out = out.replaceAll(needle, REDACTED);
    return out.includes('://') ? out.replace(USERINFO_PASSWORD, '$1***@') : out;
  };
}

/**
 * The service's root logger: JSON lines on stdout, `service` on every line, and secrets kept
 * out: authorization headers and secret settings redacted by path, URL passwords masked, and
 * the `secrets` given scrubbed from every line.
 */
export function createLogger(service: string, level: string, options: LoggerOptions = {}): Logger {
  const { paths, urlKeys } = redactPaths();
  const config = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths, censor: (value: unknown, path: string[]) => (urlKeys.has(path.at(-1)!) ? maskUrlPassword(value) : REDACTED) },
    hooks: { streamWrite: scrubber(options.secrets ?? []) },
  };
  return options.destination === undefined ? pino(config) : pino(config, options.destination);
}

/** A logger that writes nothing, the default for libraries when the caller passes none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
