// Leaf parsers: each takes the raw string from the environment and never coerces. A value
// that is not exactly what the setting means is refused with a message saying what is allowed.
import { z } from 'zod';

export const MAX_RETENTION_DAYS = 3650;

/** A whole number within [min, max], written as plain digits: "30d", "-1", "1.5", "" are refused. */
export function wholeNumber(min: number, max: number, what: string) {
  return z
    .string()
    .regex(/^[0-9]+$/, { error: `must be a whole number of ${what} from ${min} to ${max}` })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: `must be at least ${min} ${what}` }).max(max, { error: `must be at most ${max} ${what}` }));
}

export const retentionDays = wholeNumber(0, MAX_RETENTION_DAYS, 'days (0 disables)');

export function urlWith(protocols: readonly string[], what: string) {
  return z.string().superRefine((raw, ctx) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      ctx.addIssue({ code: 'custom', message: `must be a ${what} URL (${protocols.map((p) => `${p}//…`).join(' or ')})` });
      return;
    }
    if (!protocols.includes(url.protocol)) {
      ctx.addIssue({ code: 'custom', message: `must use ${protocols.join(' or ')}, not ${url.protocol}` });
    }
  });
}

export const postgresUrl = urlWith(['postgres:', 'postgresql:'], 'PostgreSQL');
export const amqpUrl = urlWith(['amqp:', 'amqps:'], 'AMQP');
export const httpUrl = urlWith(['http:', 'https:'], 'HTTP');

export const port = wholeNumber(0, 65535, '(0 picks a free port)');

export const strictBoolean = z
  .enum(['true', 'false'], { error: 'must be "true" or "false"' })
  .transform((v) => v === 'true');

export const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
  error: 'must be one of fatal, error, warn, info, debug, trace, silent',
});

export const transportKind = z.enum(['postgres', 'rabbitmq'], { error: 'must be "postgres" or "rabbitmq"' });

export const walCompression = z.enum(['lz4', 'zstd', 'pglz', 'off'], { error: 'must be one of lz4, zstd, pglz, off' });

/** `local` is named in the refusal: it has no request timeouts, so a stalled write hangs a cycle forever. */
export const objectStoreBackend = z.string().superRefine((raw, ctx) => {
  if (raw === 'local' || raw === 'file' || raw === 'filesystem') {
    ctx.addIssue({
      code: 'custom',
      message: 'is refused: a local-filesystem backend has no timeouts and no second copy; use "s3" or "garage"',
    });
  } else if (raw !== 's3' && raw !== 'garage') {
    ctx.addIssue({ code: 'custom', message: 'must be "s3" (honours If-None-Match) or "garage" (ignores it)' });
  }
}).transform((v) => v as 's3' | 'garage');

export const bucketName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: 'must be a DNS-style bucket name (3–63 of a-z, 0-9, ".", "-")' });

export const nonEmpty = z.string().min(1, { error: 'must not be empty' });

/** Shortest admin token accepted: 32 characters (`openssl rand -base64 32` is 44). */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

export const adminToken = z.string().min(MIN_ADMIN_TOKEN_LENGTH, { error: `must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters (generate one: openssl rand -base64 32)` });

export const archivePrefix = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*(\/[a-z0-9][a-z0-9-]*)*$/, { error: 'must be slash-separated lower-case segments, no leading or trailing slash' });

/** Comma-separated database names; a trailing `*` matches any suffix (`craig_inventory_t*`). */
export const databaseAllowList = z
  .string()
  .transform((raw) => raw.split(',').map((s) => s.trim()))
  .pipe(
    z
      .array(z.string().regex(/^[a-z_][a-z0-9_]*\*?$/, { error: 'each entry must be a database name, optionally ending in *' }))
      .min(1, { error: 'must list at least one database name' }),
  );

/** A PostgreSQL role name the platform creates and grants to: a plain lower-case identifier. */
export const roleName = z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: 'must be a lower-case PostgreSQL identifier: a letter or "_", then letters, digits or "_" (at most 63)' });
