import { describe, expect, it } from 'vitest';
import { defineServiceProfile, loadServiceSettings, loadSettingsParts, SERVICE_PROFILES, settingSource, SettingsError, type Env, type ServiceName, type SettingsIssue } from './index.ts';

const base: Env = {
  CRAIG_CASES__DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/cases',
  CRAIG_CASES__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
  CRAIG__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/bus',
};

function problems(service: ServiceName, env: Env): { error: SettingsError; issues: readonly SettingsIssue[] } {
  try {
    loadServiceSettings(service, env);
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return { error: error as SettingsError, issues: (error as SettingsError).issues };
  }
  throw new Error('expected a SettingsError');
}

describe('loadServiceSettings', () => {
  it('applies the defaults, typed and deeply frozen', () => {
    const s = loadServiceSettings('cases', base);
    expect(s.retention).toEqual({ outboxDays: 30, inboxDays: 31 });
    expect(s.http).toEqual({ host: '127.0.0.1', port: 7101 });
    expect(s.transport).toEqual({ kind: 'postgres', busDatabaseUrl: 'postgres://postgres@127.0.0.1:5432/bus', exchange: 'craig.events' });
    expect(s.outbox.maxAttempts).toBe(10);
    expect(s.inbox).toEqual({ maxRetries: 5, maxDeliveries: 5 });
    expect('archive' in s).toBe(false);
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.retention)).toBe(true);
    expect(() => {
      (s.retention as { outboxDays: number }).outboxDays = 1;
    }).toThrow(TypeError);
  });

  it('reads CRAIG_<SVC>__<KEY>, falls back to the fleet CRAIG__<KEY>, and the service key wins', () => {
    const fleet = loadServiceSettings('cases', { ...base, CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '20', CRAIG__EVENT_INBOX_RETENTION_DAYS: '21' });
    expect(fleet.retention).toEqual({ outboxDays: 20, inboxDays: 21 });
    const own = loadServiceSettings('cases', { ...base, CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '20', CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '7' });
    expect(own.retention.outboxDays).toBe(7);
    // Another service's own key does not leak across.
    const other = loadServiceSettings('cases', { ...base, CRAIG_RULES__EVENT_OUTBOX_RETENTION_DAYS: '3' });
    expect(other.retention.outboxDays).toBe(30);
  });

  it.each(['30d', '-1', '1.5', '', ' 30', '3651', '1e3', '0x1e'])('refuses retention days %j without coercing it', (raw) => {
    const { error, issues } = problems('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: raw });
    const issue = issues.find((i) => i.variable === 'CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS');
    expect(issue?.path).toBe('retention.outboxDays');
    expect(issue?.value).toBe(raw);
    expect(error.message).toContain(`CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=${JSON.stringify(raw)}`);
  });

  it('reads EVENT_PRUNE_EVERY_TICKS: hourly (3600) by default, any whole number from 1', () => {
    expect(loadServiceSettings('cases', base).outbox.pruneEveryTicks).toBe(3600);
    expect(loadServiceSettings('cases', { ...base, CRAIG__EVENT_PRUNE_EVERY_TICKS: '20' }).outbox.pruneEveryTicks).toBe(20);
    expect(loadServiceSettings('inventory', { ...base, CRAIG_INVENTORY__DATABASE_URL: base.CRAIG_CASES__DATABASE_URL, CRAIG_INVENTORY__ADMIN_TOKEN: base.CRAIG_CASES__ADMIN_TOKEN, CRAIG_INVENTORY__EVENT_PRUNE_EVERY_TICKS: '1' }).outbox.pruneEveryTicks).toBe(1);
  });

  it('reads SWEEP_WAL_COMPRESSION: lz4 by default, zstd, pglz or off, fleet-wide or per service', () => {
    expect(loadServiceSettings('cases', base).outbox.sweepWalCompression).toBe('lz4');
    expect(loadServiceSettings('cases', { ...base, CRAIG__SWEEP_WAL_COMPRESSION: 'off' }).outbox.sweepWalCompression).toBe('off');
    expect(loadServiceSettings('cases', { ...base, CRAIG__SWEEP_WAL_COMPRESSION: 'off', CRAIG_CASES__SWEEP_WAL_COMPRESSION: 'zstd' }).outbox.sweepWalCompression).toBe('zstd');
  });

  it('reads DRAIN_WAL_COMPRESSION apart from SWEEP_WAL_COMPRESSION: lz4 by default, fleet-wide or per service', () => {
    expect(loadServiceSettings('cases', base).outbox.drainWalCompression).toBe('lz4');
    expect(loadServiceSettings('cases', { ...base, CRAIG__SWEEP_WAL_COMPRESSION: 'off' }).outbox.drainWalCompression).toBe('lz4');
    expect(loadServiceSettings('cases', { ...base, CRAIG__DRAIN_WAL_COMPRESSION: 'off', CRAIG_CASES__DRAIN_WAL_COMPRESSION: 'pglz' }).outbox).toMatchObject({ drainWalCompression: 'pglz', sweepWalCompression: 'lz4' });
    const { issues } = problems('cases', { ...base, CRAIG_CASES__DRAIN_WAL_COMPRESSION: 'gzip' });
    expect(issues).toEqual([expect.objectContaining({ path: 'outbox.drainWalCompression', variable: 'CRAIG_CASES__DRAIN_WAL_COMPRESSION', value: 'gzip' })]);
  });

  it.each(['LZ4', 'on', 'gzip', ''])('refuses SWEEP_WAL_COMPRESSION %j, naming the variable, the value and the choices', (raw) => {
    const { error, issues } = problems('cases', { ...base, CRAIG_CASES__SWEEP_WAL_COMPRESSION: raw });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ path: 'outbox.sweepWalCompression', variable: 'CRAIG_CASES__SWEEP_WAL_COMPRESSION', value: raw });
    expect(error.message).toContain(`CRAIG_CASES__SWEEP_WAL_COMPRESSION=${JSON.stringify(raw)}`);
    expect(error.message).toContain('lz4, zstd, pglz, off');
  });

  it.each(['0', '-5', '1.5', '20s', '', '604801'])('refuses EVENT_PRUNE_EVERY_TICKS %j, naming the variable and value', (raw) => {
    const { error, issues } = problems('cases', { ...base, CRAIG_CASES__EVENT_PRUNE_EVERY_TICKS: raw });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ path: 'outbox.pruneEveryTicks', variable: 'CRAIG_CASES__EVENT_PRUNE_EVERY_TICKS', value: raw });
    expect(error.message).toContain(`CRAIG_CASES__EVENT_PRUNE_EVERY_TICKS=${JSON.stringify(raw)}`);
  });

  it('reads INBOX_MAX_DELIVERIES: 5 by default, a whole number from 1 to 100, fleet-wide or per service', () => {
    expect(loadServiceSettings('cases', { ...base, CRAIG__INBOX_MAX_DELIVERIES: '1' }).inbox.maxDeliveries).toBe(1);
    expect(loadServiceSettings('cases', { ...base, CRAIG__INBOX_MAX_DELIVERIES: '1', CRAIG_CASES__INBOX_MAX_DELIVERIES: '100' }).inbox).toEqual({ maxRetries: 5, maxDeliveries: 100 });
  });

  it.each(['0', '-1', '2.5', 'five', '', '101'])('refuses INBOX_MAX_DELIVERIES %j, naming the variable and value', (raw) => {
    const { error, issues } = problems('cases', { ...base, CRAIG_CASES__INBOX_MAX_DELIVERIES: raw });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ path: 'inbox.maxDeliveries', variable: 'CRAIG_CASES__INBOX_MAX_DELIVERIES', value: raw });
    expect(error.message).toContain(`CRAIG_CASES__INBOX_MAX_DELIVERIES=${JSON.stringify(raw)}`);
  });

  it('accepts the range ends and lets 0 disable either sweep', () => {
    expect(loadServiceSettings('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '0' }).retention).toEqual({ outboxDays: 0, inboxDays: 31 });
    expect(loadServiceSettings('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '3650', CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '0' }).retention).toEqual({
      outboxDays: 3650,
      inboxDays: 0,
    });
  });

  it('requires inbox ≥ outbox + 1 when both are on, naming both variables and values', () => {
    const { error } = problems('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '30', CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '30' });
    expect(error.message).toContain('CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS="30"');
    expect(error.message).toContain('CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS="30"');
    expect(error.issues[0]?.path).toBe('retention.inboxDays');
    expect(loadServiceSettings('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '30', CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '31' }).retention.inboxDays).toBe(31);
  });

  it('names the fleet variable when the offending window came from a fleet default', () => {
    const { error } = problems('cases', { ...base, CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '40' });
    expect(error.message).toContain('CRAIG__EVENT_OUTBOX_RETENTION_DAYS="40"');
    expect(error.message).toContain('CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS="31"');
  });

  it('masks the password of a URL the parser refuses (a bad port), and the value of a misspelt secret key', () => {
    const { error, issues } = problems('cases', {
      ...base,
      CRAIG_CASES__DATABASE_URL: 'postgres://app:s3cr3t-pw@db:port/cases',
      CRAIG_CASES__ADMIN_TOKN: 'a-misspelt-but-real-admin-token-0123456789',
      CRAIG_CASES__MY_PASSWORD: 'hunter22',
    });
    expect(issues.find((i) => i.variable === 'CRAIG_CASES__DATABASE_URL')?.value).toBe('postgres://app:***@db:port/cases');
    expect(issues.find((i) => i.variable === 'CRAIG_CASES__ADMIN_TOKN')?.value).toBe('<redacted, 42 characters>');
    expect(issues.find((i) => i.variable === 'CRAIG_CASES__MY_PASSWORD')?.value).toBe('<redacted, 8 characters>');
    for (const secret of ['s3cr3t-pw', 'a-misspelt-but-real-admin-token', 'hunter22']) expect(error.message).not.toContain(secret);
  });

  it('refuses an unknown service key and suggests the closest known one', () => {
    const { error, issues } = problems('cases', { ...base, CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAY: '10' });
    expect(issues).toHaveLength(1);
    expect(issues[0]?.variable).toBe('CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAY');
    expect(error.message).toContain('did you mean CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS?');
  });

  it('refuses a fleet key no service knows, but ignores one that belongs to another service', () => {
    const { error } = problems('cases', { ...base, CRAIG__EVENT_INBOX_RETENTON_DAYS: '40' });
    expect(error.message).toContain('did you mean CRAIG__EVENT_INBOX_RETENTION_DAYS?');
    // OBJECT_STORE_BUCKET is a security/rules/exchange key: fine as a fleet default, ignored by cases.
    expect(loadServiceSettings('cases', { ...base, CRAIG__OBJECT_STORE_BUCKET: 'archive' }).service).toBe('cases');
    // …but as a service key of cases it is a mistake.
    expect(problems('cases', { ...base, CRAIG_CASES__OBJECT_STORE_BUCKET: 'archive' }).issues[0]?.variable).toBe('CRAIG_CASES__OBJECT_STORE_BUCKET');
  });

  it('reports every problem at once', () => {
    const { issues } = problems('cases', {
      CRAIG_CASES__DATABASE_URL: 'mysql://x',
      CRAIG_CASES__HTTP_PORT: '70000',
      CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '1.5',
      CRAIG_CASES__TRANSPORT: 'kafka',
      CRAIG_CASES__LOG_LEVEL: 'loud',
    });
    expect(issues.map((i) => i.variable).sort()).toEqual(
      [
        'CRAIG_CASES__ADMIN_TOKEN',
        'CRAIG_CASES__DATABASE_URL',
        'CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS',
        'CRAIG_CASES__HTTP_PORT',
        'CRAIG_CASES__LOG_LEVEL',
        'CRAIG_CASES__TRANSPORT',
      ].sort(),
    );
    expect(issues.find((i) => i.variable === 'CRAIG_CASES__ADMIN_TOKEN')?.value).toBeUndefined();
  });

  it('refuses an admin token shorter than 32 characters, naming its length but not its value', () => {
    const short = 'x'.repeat(31);
    const { issues, error } = problems('cases', { ...base, CRAIG_CASES__ADMIN_TOKEN: short });
    expect(issues).toEqual([
      { path: 'adminToken', variable: 'CRAIG_CASES__ADMIN_TOKEN', value: '<redacted, 31 characters>', message: 'must be at least 32 characters (generate one: openssl rand -base64 32)' },
    ]);
    expect(error.message).not.toContain(short);
    expect(loadServiceSettings('cases', { ...base, CRAIG_CASES__ADMIN_TOKEN: 'x'.repeat(32) }).adminToken).toHaveLength(32);
  });

  it('redacts secrets and URL passwords in messages', () => {
    const { error } = problems('cases', {
      ...base,
      CRAIG_CASES__ADMIN_TOKEN: 'hunter2',
      CRAIG_CASES__DATABASE_URL: 'mysql://user:sekrit@db/cases',
    });
    expect(error.message).not.toContain('hunter2');
    expect(error.message).not.toContain('sekrit');
    expect(error.message).toContain('<redacted, 7 characters>');
  });

  it('requires the transport URL that the chosen transport needs', () => {
    const { issues } = problems('cases', { ...base, CRAIG__TRANSPORT: 'rabbitmq' });
    expect(issues.map((i) => i.variable)).toEqual(['CRAIG_CASES__AMQP_URL']);
    const s = loadServiceSettings('cases', { ...base, CRAIG__TRANSPORT: 'rabbitmq', CRAIG__AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672' });
    expect(s.transport).toEqual({ kind: 'rabbitmq', amqpUrl: 'amqp://guest:guest@127.0.0.1:5672', exchange: 'craig.events' });
  });

  describe('archive services', () => {
    const security: Env = {
      CRAIG_SECURITY__DATABASE_URL: 'postgres://postgres@127.0.0.1/security',
      CRAIG_SECURITY__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      CRAIG__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
      CRAIG__OBJECT_STORE_BACKEND: 'garage',
      CRAIG__OBJECT_STORE_BUCKET: 'craig-archive',
      CRAIG__OBJECT_STORE_ENDPOINT: 'http://127.0.0.1:3900',
    };

    it('loads the object store and hot window', () => {
      const s = loadServiceSettings('security', security);
      expect(s.archive.objectStore).toMatchObject({ backend: 'garage', bucket: 'craig-archive', region: 'us-east-1', forcePathStyle: false });
      expect(s.archive.hotWindowDays).toBe(90);
    });

    it('loads ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: 300 by default, 0 … 86400 seconds', () => {
      expect(loadServiceSettings('security', security).archive.firstCycleDelaySeconds).toBe(300);
      expect(loadServiceSettings('security', { ...security, CRAIG__ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: '0' }).archive.firstCycleDelaySeconds).toBe(0);
      const { issues } = problems('security', { ...security, CRAIG_SECURITY__ARCHIVE_FIRST_CYCLE_DELAY_SECONDS: '86401' });
      expect(issues).toEqual([expect.objectContaining({ variable: 'CRAIG_SECURITY__ARCHIVE_FIRST_CYCLE_DELAY_SECONDS', value: '86401' })]);
    });

    it.each(['local', 'file'])('refuses backend %j, saying why', (backend) => {
      const { error } = problems('security', { ...security, CRAIG_SECURITY__OBJECT_STORE_BACKEND: backend });
      expect(error.message).toContain(`CRAIG_SECURITY__OBJECT_STORE_BACKEND=${JSON.stringify(backend)}`);
      expect(error.message).toContain('no timeouts');
    });

    it('refuses an unknown backend and a half-set credential pair', () => {
      const { issues } = problems('security', { ...security, CRAIG__OBJECT_STORE_BACKEND: 'minio', CRAIG__OBJECT_STORE_ACCESS_KEY_ID: 'AKIA' });
      expect(issues.map((i) => i.variable).sort()).toEqual(['CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY', 'CRAIG__OBJECT_STORE_BACKEND']);
    });

    it('parses booleans strictly', () => {
      expect(loadServiceSettings('security', { ...security, CRAIG__OBJECT_STORE_FORCE_PATH_STYLE: 'true' }).archive.objectStore.forcePathStyle).toBe(true);
      const { issues } = problems('security', { ...security, CRAIG__OBJECT_STORE_FORCE_PATH_STYLE: 'yes' });
      expect(issues[0]?.message).toContain('"true" or "false"');
    });

    it("keeps exchange's hot window at 365 days or more", () => {
      const exchange: Env = Object.fromEntries(Object.entries(security).map(([k, v]) => [k.replace('SECURITY', 'EXCHANGE'), v]));
      expect(loadServiceSettings('exchange', exchange).archive.hotWindowDays).toBe(365);
      const { error } = problems('exchange', { ...exchange, CRAIG_EXCHANGE__ARCHIVE_HOT_WINDOW_DAYS: '364' });
      expect(error.message).toContain('CRAIG_EXCHANGE__ARCHIVE_HOT_WINDOW_DAYS="364"');
      expect(error.message).toContain('at least 365');
      // A fleet-wide 90 days must not shorten exchange's window either.
      expect(problems('exchange', { ...exchange, CRAIG__ARCHIVE_HOT_WINDOW_DAYS: '90' }).issues[0]?.variable).toBe('CRAIG__ARCHIVE_HOT_WINDOW_DAYS');
    });
  });

  it('loads the cleanup section for inventory', () => {
    const env: Env = {
      CRAIG_INVENTORY__DATABASE_URL: 'postgres://postgres@127.0.0.1/inventory',
      CRAIG_INVENTORY__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      CRAIG__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
      CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: 'inventory, inventory_t*',
    };
    expect(loadServiceSettings('inventory', env).cleanup).toEqual({ allowedDatabases: ['inventory', 'inventory_t*'], collectDeadlineMinutes: 60, jobRetentionDays: 14 });
    expect(problems('inventory', { ...env, CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: 'inventory;drop' }).issues[0]?.path).toBe('cleanup.allowedDatabases');
  });

  describe("financial's settled-reconcile sweep", () => {
    const financial: Env = {
      CRAIG_FINANCIAL__DATABASE_URL: 'postgres://postgres@127.0.0.1/financial',
      CRAIG_FINANCIAL__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      CRAIG__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
    };

    it('defaults RECONCILE_SETTLED_RETENTION_DAYS to 90 and lets 0 disable it', () => {
      expect(loadServiceSettings('financial', financial).reconcile).toEqual({ settledRetentionDays: 90 });
      expect(loadServiceSettings('financial', { ...financial, CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: '0' }).reconcile.settledRetentionDays).toBe(0);
      expect(loadServiceSettings('financial', { ...financial, CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: '3650' }).reconcile.settledRetentionDays).toBe(3650);
    });

    it.each(['90d', '-1', '1.5', '', '3651'])('refuses %j, naming the variable and the value', (raw) => {
      const { error, issues } = problems('financial', { ...financial, CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS: raw });
      expect(issues.map((i) => [i.path, i.variable, i.value])).toEqual([['reconcile.settledRetentionDays', 'CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS', raw]]);
      expect(error.message).toContain(`CRAIG_FINANCIAL__RECONCILE_SETTLED_RETENTION_DAYS=${JSON.stringify(raw)}`);
    });

    it('is a setting of financial only: another service refuses its own key, and has no reconcile section', () => {
      const { issues } = problems('cases', { ...base, CRAIG_CASES__RECONCILE_SETTLED_RETENTION_DAYS: '30' });
      expect(issues[0]?.message).toContain('is not a setting of service "cases"');
      // A fleet default is a key some service knows: accepted, and ignored by the others.
      const cases = loadServiceSettings('cases', { ...base, CRAIG__RECONCILE_SETTLED_RETENTION_DAYS: '30' });
      expect('reconcile' in cases).toBe(false);
      expect(loadServiceSettings('financial', { ...financial, CRAIG__RECONCILE_SETTLED_RETENTION_DAYS: '30' }).reconcile.settledRetentionDays).toBe(30);
    });
  });

  describe("exchange's send-job sweep", () => {
    const exchange: Env = {
      CRAIG_EXCHANGE__DATABASE_URL: 'postgres://postgres@127.0.0.1/exchange',
      CRAIG_EXCHANGE__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      CRAIG__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
      CRAIG_EXCHANGE__OBJECT_STORE_BACKEND: 's3',
      CRAIG_EXCHANGE__OBJECT_STORE_BUCKET: 'exchange-archive',
    };

    it('loads SEND_JOB_RETENTION_DAYS (default 30, 0 disables, whole days up to 3650)', () => {
      expect(loadServiceSettings('exchange', exchange).sendJobs).toEqual({ retentionDays: 30 });
      expect(loadServiceSettings('exchange', { ...exchange, CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS: '0' }).sendJobs.retentionDays).toBe(0);
      expect(loadServiceSettings('exchange', { ...exchange, CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS: '3650' }).sendJobs.retentionDays).toBe(3650);
      for (const raw of ['3651', '-1', '7d', '1.5']) {
        const { issues } = problems('exchange', { ...exchange, CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS: raw });
        expect(issues).toEqual([expect.objectContaining({ path: 'sendJobs.retentionDays', variable: 'CRAIG_EXCHANGE__SEND_JOB_RETENTION_DAYS', value: raw })]);
      }
    });

    it('is a setting of exchange only', () => {
      expect('sendJobs' in loadServiceSettings('cases', base)).toBe(false);
      const { issues } = problems('cases', { ...base, CRAIG_CASES__SEND_JOB_RETENTION_DAYS: '7' });
      expect(issues[0]).toMatchObject({ variable: 'CRAIG_CASES__SEND_JOB_RETENTION_DAYS', message: expect.stringContaining('is not a setting of service "cases"') });
    });

    it('extraDefs add settings to a custom profile, and a clash with a built-in key is refused', () => {
      const sweep = SERVICE_PROFILES.exchange.defs.find((d) => d.key === 'SEND_JOB_RETENTION_DAYS')!;
      const profile = defineServiceProfile({ name: 'sweep-lab', httpPort: 0, extraDefs: [sweep] });
      const s = loadServiceSettings(profile, {
        CRAIG_SWEEP_LAB__DATABASE_URL: 'postgres://postgres@127.0.0.1/lab',
        CRAIG_SWEEP_LAB__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
        CRAIG_SWEEP_LAB__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
        CRAIG_SWEEP_LAB__SEND_JOB_RETENTION_DAYS: '9',
      });
      expect(s.sendJobs).toEqual({ retentionDays: 9 });
      const port = SERVICE_PROFILES.cases.defs.find((d) => d.key === 'HTTP_PORT')!;
      expect(() => defineServiceProfile({ name: 'clash-lab', httpPort: 0, extraDefs: [port] })).toThrow('extra setting HTTP_PORT (http.port) clashes');
    });
  });

  it('refuses an unknown service name with a suggestion', () => {
    expect(() => loadServiceSettings('case' as 'cases', base)).toThrow(/did you mean "cases"/);
  });

  it('loads a custom profile (tests and tools define their own services)', () => {
    const profile = defineServiceProfile({ name: 'audit-lab', httpPort: 0, archive: { defaultHotWindowDays: 30, minHotWindowDays: 1 } });
    const s = loadServiceSettings(profile, {
      CRAIG_AUDIT_LAB__DATABASE_URL: 'postgres://postgres@127.0.0.1/audit',
      CRAIG_AUDIT_LAB__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789',
      CRAIG_AUDIT_LAB__BUS_DATABASE_URL: 'postgres://postgres@127.0.0.1/bus',
      CRAIG_AUDIT_LAB__OBJECT_STORE_BACKEND: 's3',
      CRAIG_AUDIT_LAB__OBJECT_STORE_BUCKET: 'lab-archive',
    });
    expect(s.service).toBe('audit-lab');
    expect(s.archive?.hotWindowDays).toBe(30);
  });

  describe('the two logins of a database (MIGRATION_DATABASE_URL, RUNTIME_ROLE)', () => {
    const twoLogins: Env = {
      ...base,
      CRAIG_CASES__DATABASE_URL: 'postgres://craig_cases_app:pw@127.0.0.1:5432/cases',
      CRAIG_CASES__MIGRATION_DATABASE_URL: 'postgres://cases_owner:pw@127.0.0.1:5432/cases',
    };

    it('defaults RUNTIME_ROLE to craig_<service>_app (inventory keeps craig_inventory_runtime) and the migration URL to none', () => {
      const s = loadServiceSettings('cases', base);
      expect(s.runtimeRole).toBe('craig_cases_app');
      expect(s.migrationDatabaseUrl).toBeUndefined();
      expect(loadServiceSettings('exchange', { CRAIG_EXCHANGE__DATABASE_URL: 'postgres://x@127.0.0.1/exchange', CRAIG_EXCHANGE__ADMIN_TOKEN: 'a-long-enough-admin-token-0123456789', CRAIG__BUS_DATABASE_URL: 'postgres://x@127.0.0.1/bus', CRAIG__OBJECT_STORE_BACKEND: 's3', CRAIG__OBJECT_STORE_BUCKET: 'archive' }).runtimeRole).toBe('craig_exchange_app');
      expect(SERVICE_PROFILES.inventory.defs.find((d) => d.key === 'RUNTIME_ROLE')?.default).toBe('craig_inventory_runtime');
      expect(defineServiceProfile({ name: 'audit-lab', httpPort: 0 }).defs.find((d) => d.key === 'RUNTIME_ROLE')?.default).toBe('craig_audit_lab_app');
    });

    it('loads two logins of one database', () => {
      const s = loadServiceSettings('cases', { ...twoLogins, CRAIG__RUNTIME_ROLE: 'craig_cases_app' });
      expect(s.migrationDatabaseUrl).toBe('postgres://cases_owner:pw@127.0.0.1:5432/cases');
      expect(s.runtimeRole).toBe('craig_cases_app');
    });

    it('refuses a role name that is not a plain identifier, naming the variable and value', () => {
      const { issues } = problems('cases', { ...base, CRAIG_CASES__RUNTIME_ROLE: 'Cases-App' });
      expect(issues).toEqual([expect.objectContaining({ path: 'runtimeRole', variable: 'CRAIG_CASES__RUNTIME_ROLE', value: 'Cases-App' })]);
    });

    it('refuses a migration URL of another database, as the runtime role, or the same login as DATABASE_URL (passwords redacted)', () => {
      const other = problems('cases', { ...twoLogins, CRAIG_CASES__MIGRATION_DATABASE_URL: 'postgres://cases_owner:pw@127.0.0.1:5432/placements' });
      expect(other.issues).toEqual([expect.objectContaining({ variable: 'CRAIG_CASES__MIGRATION_DATABASE_URL', value: 'postgres://cases_owner:***@127.0.0.1:5432/placements' })]);
      expect(other.issues[0]!.message).toContain('must name the database CRAIG_CASES__DATABASE_URL names (127.0.0.1:5432/cases), not 127.0.0.1:5432/placements');
      const asRuntime = problems('cases', { ...twoLogins, CRAIG_CASES__MIGRATION_DATABASE_URL: 'postgres://craig_cases_app@127.0.0.1:5432/cases' });
      expect(asRuntime.issues.map((i) => [i.variable, i.message.split(':')[0]])).toEqual([
        ['CRAIG_CASES__MIGRATION_DATABASE_URL', 'logs in as craig_cases_app, the runtime role (CRAIG_CASES__RUNTIME_ROLE)'],
        ['CRAIG_CASES__DATABASE_URL', 'logs in as craig_cases_app, the migration login of CRAIG_CASES__MIGRATION_DATABASE_URL'],
      ]);
      const sameLogin = problems('cases', { ...twoLogins, CRAIG_CASES__DATABASE_URL: 'postgres://cases_owner:pw@127.0.0.1:5432/cases' });
      expect(sameLogin.issues).toEqual([expect.objectContaining({ variable: 'CRAIG_CASES__DATABASE_URL', value: 'postgres://cases_owner:***@127.0.0.1:5432/cases' })]);
    });
  });
});

describe('loadSettingsParts', () => {
  // What `pnpm xtask prune` has on an operator's machine: the database and the windows, no token, no bus.
  const tool: Env = { CRAIG_SECURITY__DATABASE_URL: 'postgres://postgres@127.0.0.1/security', CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '10' };

  it('loads only the parts asked for: no admin token, bus URL or object store needed', () => {
    const s = loadSettingsParts('security', tool, ['databaseUrl', 'retention', 'archive']);
    expect(s).toEqual({
      service: 'security',
      databaseUrl: 'postgres://postgres@127.0.0.1/security',
      retention: { outboxDays: 10, inboxDays: 31 },
      archive: { hotWindowDays: 90, prefix: 'archive', everyMinutes: 60, firstCycleDelaySeconds: 300 },
    });
    expect(Object.isFrozen(s.retention)).toBe(true);
    // The same environment is refused by the whole loader: the service itself needs the rest.
    expect(() => loadServiceSettings('security', tool)).toThrow(/ADMIN_TOKEN\(unset\) is required/);
  });

  it('adds the object store with objectStore, required and cross-checked as for the service', () => {
    expect(() => loadSettingsParts('security', tool, ['databaseUrl', 'archive', 'objectStore'])).toThrow(/OBJECT_STORE_BUCKET\(unset\) is required/);
    const { issues } = (() => {
      try {
        loadSettingsParts('security', { ...tool, CRAIG__OBJECT_STORE_BACKEND: 's3', CRAIG__OBJECT_STORE_BUCKET: 'craig-archive', CRAIG__OBJECT_STORE_ACCESS_KEY_ID: 'AKIA' }, ['objectStore']);
      } catch (error) {
        return error as SettingsError;
      }
      throw new Error('expected a SettingsError');
    })();
    expect(issues.map((i) => i.variable)).toEqual(['CRAIG_SECURITY__OBJECT_STORE_SECRET_ACCESS_KEY']);
  });

  it('validates the parts it loads, with the dedup horizon when both windows are loaded', () => {
    expect(() => loadSettingsParts('cases', { CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '30' }, ['retention'])).toThrow(
      /CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS="30" must be at least CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS \+ 1 = 31/,
    );
    expect(() => loadSettingsParts('cases', { CRAIG_CASES__DATABASE_URL: 'mysql://x' }, ['databaseUrl'])).toThrow(/CRAIG_CASES__DATABASE_URL="mysql:\/\/x"/);
  });

  it('still refuses unknown keys against the whole profile, and ignores bad values of parts it does not load', () => {
    expect(() => loadSettingsParts('cases', { CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAY: '10' }, ['retention'])).toThrow(/did you mean CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS/);
    expect(loadSettingsParts('cases', { CRAIG_CASES__ADMIN_TOKEN: 'short', CRAIG_CASES__TRANSPORT: 'kafka' }, ['retention']).retention).toEqual({ outboxDays: 30, inboxDays: 31 });
  });

  it('leaves out the sections a profile does not have', () => {
    expect(loadSettingsParts('cases', {}, ['retention', 'archive', 'cleanup'])).toEqual({ service: 'cases', retention: { outboxDays: 30, inboxDays: 31 } });
    expect(loadSettingsParts('financial', {}, ['reconcile']).reconcile).toEqual({ settledRetentionDays: 90 });
  });
});

describe('settingSource', () => {
  it('names the variable a value comes from: the service key, the fleet key, or the default', () => {
    expect(settingSource('cases', 'EVENT_OUTBOX_RETENTION_DAYS', {})).toEqual({ variable: 'CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS', raw: '30', fromDefault: true });
    expect(settingSource('cases', 'EVENT_OUTBOX_RETENTION_DAYS', { CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '7' })).toEqual({ variable: 'CRAIG__EVENT_OUTBOX_RETENTION_DAYS', raw: '7', fromDefault: false });
    expect(settingSource('cases', 'EVENT_OUTBOX_RETENTION_DAYS', { CRAIG__EVENT_OUTBOX_RETENTION_DAYS: '7', CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '8' }).variable).toBe('CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS');
    expect(() => settingSource('cases', 'ARCHIVE_PREFIX', {})).toThrow(/cases has no setting ARCHIVE_PREFIX/);
  });
});
