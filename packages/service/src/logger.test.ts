import { PassThrough } from 'node:stream';
import { loadServiceSettings, secretValues } from '@craig/settings';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';

function logged(secrets: readonly string[], write: (logger: ReturnType<typeof createLogger>) => void): string {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  write(createLogger('cases', 'info', { secrets, destination: stream }));
  return Buffer.concat(chunks).toString('utf8');
}

describe('createLogger', () => {
  const token = 'tok-0123456789abcdef0123456789abcdef';
  const settings = loadServiceSettings('security', {
    CRAIG_SECURITY__DATABASE_URL: 'postgres://app:db-pass-123@db/security',
    CRAIG_SECURITY__BUS_DATABASE_URL: 'postgres://bus:bus%40pass-456@db/bus',
    CRAIG_SECURITY__ADMIN_TOKEN: token,
    CRAIG_SECURITY__OBJECT_STORE_BACKEND: 's3',
    CRAIG_SECURITY__OBJECT_STORE_BUCKET: 'archive',
    CRAIG_SECURITY__OBJECT_STORE_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY: 's3-secret-key-789',
  });
  const secrets = secretValues(settings);

  it('knows the secrets of loaded settings: the token, the S3 secret key, URL passwords (decoded and as written)', () => {
    expect(secrets).toEqual(expect.arrayContaining([token, 's3-secret-key-789', 'db-pass-123', 'bus@pass-456', 'bus%40pass-456']));
    expect(secrets).not.toContain('AKIAEXAMPLE');
  });

  it('keeps them out of every line: settings logged whole, headers, messages, error fields', () => {
    const out = logged(secrets, (logger) => {
      logger.info({ settings }, 'booting');
      logger.info(settings, 'settings at the top level');
      logger.info({ req: { headers: { authorization: `Bearer ${token}` } } }, 'a request');
      logger.warn({ headers: { authorization: 'Bearer some-other-guess' } }, 'a guess');
      logger.error({ err: Object.assign(new Error(`connect failed for postgres://app:db-pass-123@db/security (token ${token})`), { input: 'postgres://bus:bus%40pass-456@db/bus' }) }, 'failed');
      logger.info(`the key is s3-secret-key-789 and the quoted token is ${JSON.stringify({ token })}`);
    });
    for (const secret of [token, 's3-secret-key-789', 'db-pass-123', 'bus@pass-456', 'bus%40pass-456', 'some-other-guess']) expect(out).not.toContain(secret);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(6);
    expect((lines[0]!.settings as { databaseUrl: string }).databaseUrl).toBe('postgres://app:***@db/security');
    expect((lines[0]!.settings as { adminToken: string }).adminToken).toBe('[redacted]');
    expect((lines[1] as { archive: { objectStore: { secretAccessKey: string; accessKeyId: string } } }).archive.objectStore).toMatchObject({ secretAccessKey: '[redacted]', accessKeyId: 'AKIAEXAMPLE' });
    expect(lines[2]).toMatchObject({ req: { headers: { authorization: '[redacted]' } } });
  });

  it('masks a URL password it was not told about, wherever it appears', () => {
    const out = logged([], (logger) => logger.info({ note: 'amqp://guest:unlisted-pw@mq:5672/vhost' }, 'see postgres://u:other-pw@h:bad/x'));
    expect(out).not.toContain('unlisted-pw');
    expect(out).not.toContain('other-pw');
    expect(out).toContain('amqp://guest:***@mq:5672/vhost');
  });
});
