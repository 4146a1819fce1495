// The settings loader under random environments (fast-check): valid settings or a typed
// SettingsError listing every problem, never another exception, in bounded time, and never a
// secret in the error (secret settings, URL passwords, misspelt secret keys).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SettingsError } from './errors.ts';
import { loadServiceSettings, type Env } from './load.ts';
import { allKnownKeys, SERVICE_NAMES, SERVICE_PROFILES } from './profiles.ts';

const RUNS = Number(process.env.CRAIG_FUZZ_RUNS ?? 1000);
const seed = (n: number) => (process.env.CRAIG_FUZZ_SEED === undefined ? n : Number(process.env.CRAIG_FUZZ_SEED));

const KEYS = allKnownKeys();
// Markers a secret carries: the property is that none appears in any refusal.
const SECRET = fc.stringMatching(/^[A-Za-z0-9]{10,20}$/).map((s) => `SeCrEt${s}`);
const value = fc.oneof(
  fc.constantFrom('', ' ', '0', '1', '30', '31', '-1', '1.5', '30d', '1e3', '0x10', '007', '99999999999999999999999', 'true', 'false', 'TRUE', 'postgres', 'rabbitmq', 's3', 'garage', 'local', 'info', 'loud', 'inventory,inventory_t*', ',', 'a b', 'archive/x', '/x/', 'bucket-name'),
  fc.constantFrom('postgres://127.0.0.1/x', 'postgresql://u@h:5432/d', 'amqp://guest@h', 'http://h:9000', 'https://h', 'mysql://h/x', 'postgres://', 'not a url', 'postgres://h:port/x'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.nat({ max: 70_000 }).map(String),
  fc.constant('x'.repeat(100_000)),
);
// A secret value as it can appear: a token, a secret key, a URL password (parsable or not), a misspelt secret key's value.
const secretBearing = fc.tuple(SECRET, fc.constantFrom('token', 'url', 'bad-url', 'amqp')).map(([s, kind]) =>
  kind === 'token' ? { value: `${s}-${'t'.repeat(32)}`, secret: s } : kind === 'url' ? { value: `postgres://app:${s}@db/x`, secret: s } : kind === 'bad-url' ? { value: `postgres://app:${s}@db:port/x`, secret: s } : { value: `amqp://guest:${s}@mq:5672`, secret: s },
);

const keyFor = fc.tuple(fc.constantFrom(...SERVICE_NAMES.map((n) => SERVICE_PROFILES[n].envPrefix), 'CRAIG__', 'CRAIG_NOPE__', 'OTHER_'), fc.oneof(fc.constantFrom(...KEYS), fc.constantFrom(...KEYS).map((k) => k.slice(0, -1)), fc.string({ maxLength: 12 }), fc.constant('K'.repeat(50_000)))).map(([p, k]) => p + k);
// Where each kind of secret goes: whole secrets under secret keys (and misspellings of them), passwords inside URL settings.
const TOKEN_KEYS = ['ADMIN_TOKEN', 'OBJECT_STORE_SECRET_ACCESS_KEY', 'ADMIN_TOKN', 'OBJECT_STORE_SECRET_ACCESS_KY', 'MY_PASSWORD'];
const URL_KEYS = ['DATABASE_URL', 'BUS_DATABASE_URL', 'AMQP_URL', 'OBJECT_STORE_ENDPOINT'];
const placedSecret = secretBearing.chain((s) => fc.constantFrom(...(s.value.includes('://') ? URL_KEYS : TOKEN_KEYS)).map((key) => [key, s] as const));

const envArbitrary = fc.record({
  service: fc.oneof({ arbitrary: fc.constantFrom(...SERVICE_NAMES), weight: 9 }, { arbitrary: fc.string({ maxLength: 10 }), weight: 1 }),
  plain: fc.dictionary(keyFor, value, { maxKeys: 12 }),
  secrets: fc.array(fc.tuple(fc.constantFrom(...SERVICE_NAMES.map((n) => SERVICE_PROFILES[n].envPrefix), 'CRAIG__'), placedSecret).map(([p, [key, s]]) => [p, key, s] as const), { maxLength: 4 }),
  base: fc.boolean(),
});

describe('loadServiceSettings under random environments', () => {
  it(`answers valid settings or a SettingsError naming every problem, never another exception, never a secret (${RUNS} cases)`, () => {
    fc.assert(
      fc.property(envArbitrary, ({ service, plain, secrets, base }) => {
        const env: Record<string, string> = {};
        const prefix = SERVICE_PROFILES[service as (typeof SERVICE_NAMES)[number]]?.envPrefix ?? 'CRAIG_X__';
        // Half the cases start from a loadable environment, so the mutations are what is judged.
        if (base) Object.assign(env, { [`${prefix}DATABASE_URL`]: 'postgres://127.0.0.1/x', [`${prefix}ADMIN_TOKEN`]: 'a'.repeat(32), CRAIG__BUS_DATABASE_URL: 'postgres://127.0.0.1/bus', CRAIG__OBJECT_STORE_BACKEND: 's3', CRAIG__OBJECT_STORE_BUCKET: 'archive' });
        Object.assign(env, plain);
        const hidden: string[] = [];
        for (const [p, key, s] of secrets) {
          env[p + key] = s.value;
          hidden.push(s.secret);
        }
        const started = performance.now();
        let result: unknown;
        try {
          result = loadServiceSettings(service as never, env as Env);
        } catch (error) {
          if (!(error instanceof SettingsError)) throw new Error(`threw ${String(error)} for ${JSON.stringify(env).slice(0, 500)}`, { cause: error });
          expect(error.issues.length).toBeGreaterThan(0);
          for (const issue of error.issues) {
            expect(typeof issue.variable).toBe('string');
            expect(typeof issue.message).toBe('string');
          }
          for (const secret of hidden) {
            expect(error.message).not.toContain(secret);
            expect(JSON.stringify(error.issues)).not.toContain(secret);
          }
          result = error;
        }
        expect(performance.now() - started).toBeLessThan(1000);
        if (!(result instanceof SettingsError)) {
          const s = result as { adminToken: string; retention: { outboxDays: number; inboxDays: number } };
          expect(Object.isFrozen(s)).toBe(true);
          expect(s.adminToken.length).toBeGreaterThanOrEqual(32);
          const { outboxDays, inboxDays } = s.retention;
          expect(outboxDays === 0 || inboxDays === 0 || inboxDays >= outboxDays + 1).toBe(true);
        }
      }),
      { numRuns: RUNS, seed: seed(20_261_001) },
    );
  });
});
