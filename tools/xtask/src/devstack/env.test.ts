import { loadServiceSettings, SERVICE_PROFILES } from '@craig/settings';
import { describe, expect, it } from 'vitest';
import { DevstackOptionError, parseDevstackOptions } from './options.ts';
import { chooseServer, childEnv, needsServer, serviceEnv, type StackInfra } from './env.ts';

const infra: StackInfra = {
  serverUrl: 'postgres://postgres:pw@127.0.0.1:5999/postgres',
  dbPrefix: 'craig_',
  adminToken: 'a-devstack-admin-token-0123456789',
  portBase: undefined,
  transport: { kind: 'postgres' },
  objectStore: { endpoint: 'http://127.0.0.1:4568', region: 'us-east-1', bucket: 'craig-devstack', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
};

describe('devstack env', () => {
  it('gives inventory its own database, the bus, a short prune cadence and its database on the cleanup allow-list', () => {
    const env = serviceEnv(SERVICE_PROFILES.inventory, infra, {});
    expect(env).toMatchObject({
      CRAIG_INVENTORY__DATABASE_URL: 'postgres://postgres:pw@127.0.0.1:5999/craig_inventory',
      CRAIG_INVENTORY__BUS_DATABASE_URL: 'postgres://postgres:pw@127.0.0.1:5999/craig_bus',
      CRAIG_INVENTORY__HTTP_PORT: '7108',
      CRAIG_INVENTORY__EVENT_PRUNE_EVERY_TICKS: '20',
      CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: 'craig_inventory',
      CRAIG_INVENTORY__TRANSPORT: 'postgres',
    });
    // Only keys of the inventory profile: no object-store keys for a service that does not archive.
    expect(Object.keys(env).some((k) => k.includes('OBJECT_STORE'))).toBe(false);
    const settings = loadServiceSettings('inventory', childEnv({}, env));
    expect(settings.cleanup.allowedDatabases).toEqual(['craig_inventory']);
    expect(settings.outbox.pruneEveryTicks).toBe(20);
  });

  it('gives an archiving service the S3 server and ports from --port-base in SERVICE_NAMES order', () => {
    const env = serviceEnv(SERVICE_PROFILES.security, { ...infra, portBase: 9000 }, {});
    const settings = loadServiceSettings('security', childEnv({}, env));
    expect(settings.http.port).toBe(9003);
    expect(settings.archive.objectStore).toMatchObject({ backend: 's3', endpoint: 'http://127.0.0.1:4568', bucket: 'craig-devstack', forcePathStyle: true });
    expect(settings.archive.everyMinutes).toBe(1);
    // The first timed cycle 20–40 s after start: after the seeding, within the first minute.
    expect(settings.archive.firstCycleDelaySeconds).toBe(20);
  });

  it('lets the user win: own keys, then fleet keys; the fleet DATABASE_URL names the server only', () => {
    const user = {
      CRAIG__DATABASE_URL: 'postgres://elsewhere/admin',
      CRAIG_INVENTORY__DATABASE_URL: 'postgres://u@db.example:5432/inv',
      CRAIG__EVENT_PRUNE_EVERY_TICKS: '3600',
      CRAIG_INVENTORY__LOG_LEVEL: 'debug',
    };
    const env = serviceEnv(SERVICE_PROFILES.inventory, infra, user);
    expect(env.CRAIG_INVENTORY__DATABASE_URL).toBe('postgres://u@db.example:5432/inv');
    expect(env.CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES).toBe('inv');
    expect(env.CRAIG_INVENTORY__EVENT_PRUNE_EVERY_TICKS).toBe('3600');
    expect(env.CRAIG_INVENTORY__LOG_LEVEL).toBe('debug');
    expect(childEnv(user, env).CRAIG__DATABASE_URL).toBeUndefined();
    expect(serviceEnv(SERVICE_PROFILES.cases, infra, user).CRAIG_CASES__DATABASE_URL).toBe('postgres://postgres:pw@127.0.0.1:5999/craig_cases');
  });

  it('picks CRAIG__DATABASE_URL, then DATABASE_URL, else the embedded cluster', () => {
    expect(chooseServer({ CRAIG__DATABASE_URL: 'postgres://a/x', DATABASE_URL: 'postgres://b/y' })).toEqual({ kind: 'external', url: 'postgres://a/x', variable: 'CRAIG__DATABASE_URL' });
    expect(chooseServer({ DATABASE_URL: 'postgres://b/y' })).toEqual({ kind: 'external', url: 'postgres://b/y', variable: 'DATABASE_URL' });
    expect(chooseServer({})).toEqual({ kind: 'embedded' });
    const inv = [SERVICE_PROFILES.inventory];
    expect(needsServer(inv, {}, false)).toBe(true);
    expect(needsServer(inv, { CRAIG_INVENTORY__DATABASE_URL: 'postgres://x/y' }, false)).toBe(true);
    expect(needsServer(inv, { CRAIG_INVENTORY__DATABASE_URL: 'postgres://x/y' }, true)).toBe(false);
    expect(needsServer(inv, { CRAIG_INVENTORY__DATABASE_URL: 'postgres://x/y', CRAIG__BUS_DATABASE_URL: 'postgres://x/bus' }, false)).toBe(false);
  });
});

describe('devstack options', () => {
  it('parses every flag', () => {
    const o = parseDevstackOptions(['--fresh', '--port-base', '9100', '--rabbitmq', '--for', '45', '--quiet', '--only', 'inventory,cases', '--state-dir', 'tmp/ds', '--history-rows', '500', '--db-prefix', 'ds_t1_', '--seed', '9', '--replicas', '2'], '/repo');
    expect(o).toEqual({ fresh: true, portBase: 9100, rabbitmq: true, forSeconds: 45, quiet: true, only: ['inventory', 'cases'], stateDir: '/repo/tmp/ds', historyRows: 500, dbPrefix: 'ds_t1_', seed: 9, replicas: 2, printScrapeConfig: false });
    expect(parseDevstackOptions([], '/repo')).toMatchObject({ stateDir: '/repo/.devstack', historyRows: 20000, dbPrefix: 'craig_', portBase: undefined, forSeconds: undefined, replicas: 1, printScrapeConfig: false });
    expect(parseDevstackOptions(['--print-scrape-config', '--port-base', '9100'], '/repo')).toMatchObject({ printScrapeConfig: true, portBase: 9100 });
  });

  it.each([
    [['--port-base', '80'], 'port-base', '80'],
    [['--port-base', '70000'], 'port-base', '70000'],
    [['--for', '0'], 'for', '0'],
    [['--for', '10s'], 'for', '10s'],
    [['--only', 'inventory,ledger'], 'only', 'inventory,ledger'],
    [['--db-prefix', 'Craig-'], 'db-prefix', 'Craig-'],
    [['--history-rows', '-1'], 'history-rows', '-1'],
    [['--replicas', '0'], 'replicas', '0'],
    [['--replicas', '5'], 'replicas', '5'],
    // Eight services times four replicas from 65,510 would run past the last port.
    [['--replicas', '4', '--port-base', '65510'], 'port-base', '65510'],
  ])('refuses %j with a typed error naming the value', (argv, option, value) => {
    let error: unknown;
    try {
      parseDevstackOptions(argv, '/repo');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DevstackOptionError);
    expect(error).toMatchObject({ code: 'devstack_bad_option', option, value });
    expect((error as Error).message).toContain(JSON.stringify(value));
  });
});

describe('replica ports', () => {
  it('gives replica k the service port plus 8 (k - 1)', async () => {
    const { replicaPorts } = await import('./stack.ts');
    expect(replicaPorts(7101, 1)).toEqual([7101]);
    expect(replicaPorts(7101, 3)).toEqual([7101, 7109, 7117]);
  });
});
