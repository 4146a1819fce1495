import { describe, expect, it } from 'vitest';
import { objectStoreEnv, serviceEnv, stoppedSteps } from './main-process.ts';

describe('stoppedSteps', () => {
  it('orders "stopped" lines by their own time, not by arrival, and ignores everything else', () => {
    const log = [
      '{"level":30,"time":"2026-12-02T10:00:00.300Z","step":"transport","msg":"stopped"}',
      'not json',
      '{"level":30,"time":"2026-12-02T10:00:00.100Z","step":"http","msg":"stopped"}',
      '{"level":30,"time":"2026-12-02T10:00:00.200Z","step":"outbox worker","msg":"started"}',
      '{"level":30,"time":"2026-12-02T10:00:00.200Z","step":"outbox worker","msg":"stopped"}',
      '{"level":30,"time":"2026-12-02T10:00:00.250Z","msg":"stopped"}',
    ].join('\n');
    expect(stoppedSteps(log)).toEqual(['http', 'outbox worker', 'transport']);
  });
});

describe('settings helpers', () => {
  it('name the service-prefixed variables', () => {
    expect(serviceEnv('rules', { databaseUrl: 'postgres://db', busDatabaseUrl: 'postgres://bus', adminToken: 't', port: 8080 })).toEqual({
      CRAIG_RULES__DATABASE_URL: 'postgres://db',
      CRAIG_RULES__BUS_DATABASE_URL: 'postgres://bus',
      CRAIG_RULES__ADMIN_TOKEN: 't',
      CRAIG_RULES__HTTP_PORT: '8080',
    });
    // As production runs it: the runtime role logs in, the given URL's login migrates.
    expect(serviceEnv('rules', { databaseUrl: 'postgres://owner:pw@db:5432/rules', busDatabaseUrl: 'postgres://bus', adminToken: 't', port: 8080, runtimeRole: 'craig_rules_app' })).toMatchObject({
      CRAIG_RULES__DATABASE_URL: 'postgres://craig_rules_app@db:5432/rules',
      CRAIG_RULES__MIGRATION_DATABASE_URL: 'postgres://owner:pw@db:5432/rules',
      CRAIG_RULES__RUNTIME_ROLE: 'craig_rules_app',
    });
    const env = objectStoreEnv('security', { endpoint: 'http://s3', region: 'r', bucket: 'b', accessKeyId: 'k', secretAccessKey: 's' } as Parameters<typeof objectStoreEnv>[1]);
    expect(env).toEqual({
      CRAIG_SECURITY__OBJECT_STORE_BACKEND: 's3',
      CRAIG_SECURITY__OBJECT_STORE_ENDPOINT: 'http://s3',
      CRAIG_SECURITY__OBJECT_STORE_REGION: 'r',
      CRAIG_SECURITY__OBJECT_STORE_BUCKET: 'b',
      CRAIG_SECURITY__OBJECT_STORE_ACCESS_KEY_ID: 'k',
      CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY: 's',
      CRAIG_SECURITY__OBJECT_STORE_FORCE_PATH_STYLE: 'true',
    });
  });
});
