// serviceCore and the boot context's coreDeps against real PostgreSQL and the PostgreSQL bus:
// the app every createService starts from (readiness, the event admin routes on the service's
// own outbox, the body limit), its outbox worker publishing, and what a service may replace.
import { MQ_MIGRATIONS, stageEvent } from '@craig/mq';
import { loadServiceSettings } from '@craig/settings';
import { eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { bootService, subscriptionTask } from './boot.ts';
import { Lifecycle } from './lifecycle.ts';
import { consumerOptions, inboxDeps, serviceCore } from './service-core.ts';

const TOKEN = 'an-admin-token-for-tests-0123456789';
const dbs: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(dbs.splice(0).map((d) => d.drop()));
});

/** A logger whose "stopped" lines (one per lifecycle step) are kept in order. */
function capturingLogger() {
  const stopped: unknown[] = [];
  const logger = pino({ level: 'info' }, {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; step?: unknown };
      if (entry.msg === 'stopped') stopped.push(entry.step);
    },
  });
  return { logger, stoppedSteps: () => stopped };
}

async function setup(extra: Record<string, string> = {}) {
  const [db, bus] = await Promise.all([testDatabase({ prefix: 'core_t', max: 1 }), testDatabase({ prefix: 'core_bus_t', max: 1 })]);
  dbs.push(db, bus);
  const settings = loadServiceSettings('cases', {
    CRAIG_CASES__DATABASE_URL: db.url,
    CRAIG_CASES__BUS_DATABASE_URL: bus.url,
    CRAIG_CASES__ADMIN_TOKEN: TOKEN,
    CRAIG_CASES__HTTP_PORT: '0',
    ...extra,
  });
  return { db, settings, ...capturingLogger() };
}

const post = (port: number, path: string, body: unknown, token?: string) =>
  fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('serviceCore', () => {
  it('builds from coreDeps an app with readiness on the pool and replay/redrive on the own outbox, and an outbox worker that publishes', async () => {
    const { db, settings, logger } = await setup({ CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS: '7', CRAIG_CASES__EVENT_INBOX_RETENTION_DAYS: '8', CRAIG_CASES__OUTBOX_MAX_ATTEMPTS: '4' });
    const life = new Lifecycle(logger);
    try {
      const booted = await bootService(settings, logger, life, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 2 },
        build: (ctx) => {
          const { app, outbox } = serviceCore('cases', ctx.coreDeps, { bodyLimitBytes: 2048 });
          return { app, outbox };
        },
      });
      // coreDeps carries the settings every createService takes.
      expect(booted.coreDeps).toMatchObject({ databaseUrl: db.url, adminToken: TOKEN, retention: { outboxDays: 7, inboxDays: 8 }, outboxMaxAttempts: 4, pruneEveryTicks: settings.outbox.pruneEveryTicks, sweepWalCompression: 'lz4', drainWalCompression: 'lz4' });
      const { port } = booted.address;

      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ service: 'cases', checks: [{ name: 'database', ok: true }] });

      // The outbox worker runs on the service's pool and transport.
      await db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'case', aggregateId: 'c-1', eventType: 'case.opened', payload: {} }));
      await eventually(async () => expect(await db.sql`select published_at is not null as published from event_outbox`).toEqual([{ published: true }]));

      // Replay: admin-only, on this outbox, checked against this service's windows (7/8 days).
      const range = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 3_600_000).toISOString() };
      expect((await post(port, '/v1/admin/events/replay', range)).status).toBe(401);
      const replayed = await post(port, '/v1/admin/events/replay', range, TOKEN);
      expect(replayed.status).toBe(200);
      expect(await replayed.json()).toMatchObject({ replayed: 1 });
      await eventually(async () => expect(await db.sql`select replay_count, published_at is not null as published from event_outbox`).toEqual([{ replay_count: 1, published: true }]));
      const tooOld = await post(port, '/v1/admin/events/replay', { from: new Date(Date.now() - 10 * 86_400_000).toISOString(), to: range.to }, TOKEN);
      expect(tooOld.status).toBe(400);
      expect(((await tooOld.json()) as { error: { code: string } }).error.code).toBe('replay_out_of_window');

      const redriven = await post(port, '/v1/admin/events/redrive', {}, TOKEN);
      expect(redriven.status).toBe(200);
      expect(await redriven.json()).toMatchObject({ redriven: 0 });
      // The service's limit (2 KiB) is the default of routes that declare none; redrive declares
      // its own room (256 KiB) for 10,000 ids, and a body past it is refused.
      expect((await post(port, '/v1/admin/events/redrive', { ids: Array.from({ length: 400 }, (_, i) => String(i + 1)) }, TOKEN)).status).toBe(200);
      expect((await post(port, '/v1/admin/events/redrive', { ids: Array.from({ length: 20_000 }, (_, i) => String(i + 1_000_000_000_000)) }, TOKEN)).status).toBe(413);
      expect((await post(port, '/v1/admin/events/replay', { from: 'x'.repeat(2000), to: 'y' }, TOKEN)).status).toBe(413);
    } finally {
      await life.stop();
    }
  });

  it("takes the service's own readiness checks and event admin handlers instead", async () => {
    const { settings, logger } = await setup();
    const life = new Lifecycle(logger);
    try {
      const booted = await bootService(settings, logger, life, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 1 },
        build: (ctx) =>
          serviceCore('cases', ctx.coreDeps, {
            readiness: [{ name: 'runtime role', check: async () => Promise.reject(new Error('connected as the owner')) }],
            eventAdmin: { replay: async (request) => ({ echoed: request.from }) },
          }),
      });
      const { port } = booted.address;
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ checks: [{ name: 'runtime role', ok: false, error: 'connected as the owner' }] });
      const replay = await post(port, '/v1/admin/events/replay', { from: 'a', to: 'b' }, TOKEN);
      expect(await replay.json()).toEqual({ echoed: 'a' });
      // No redrive handler given: no redrive route.
      expect((await post(port, '/v1/admin/events/redrive', {}, TOKEN)).status).toBe(404);
    } finally {
      await life.stop();
    }
  });
});

describe('subscriptionTask', () => {
  it('opens with the background tasks after the outbox worker and closes before it; a failed open leaves nothing to close', async () => {
    const { settings, logger, stoppedSteps } = await setup();
    const life = new Lifecycle(logger);
    const events: string[] = [];
    try {
      await bootService(settings, logger, life, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 1 },
        build: (ctx) => {
          const { app, outbox } = serviceCore('cases', ctx.coreDeps);
          return {
            app,
            outbox,
            background: [
              subscriptionTask('consumers', async () => {
                events.push('opened');
                return { close: async () => void events.push('closed') };
              }),
            ],
          };
        },
      });
      expect(events).toEqual(['opened']);
    } finally {
      await life.stop();
    }
    expect(events).toEqual(['opened', 'closed']);
    expect(stoppedSteps()).toEqual(['http', 'consumers', 'outbox worker', 'transport', 'database pool']);

    const failed = await setup();
    const failedLife = new Lifecycle(failed.logger);
    await expect(
      bootService(failed.settings, failed.logger, failedLife, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 1 },
        build: (ctx) => ({ ...serviceCore('cases', ctx.coreDeps), background: [subscriptionTask('consumers', () => Promise.reject(new Error('queue refused')))] }),
      }),
    ).rejects.toThrow('queue refused');
    await failedLife.stop();
    expect(failed.stoppedSteps()).toEqual(['outbox worker', 'transport', 'database pool']);
  });
});

describe('consumerOptions', () => {
  it('passes INBOX_MAX_RETRIES, INBOX_MAX_DELIVERIES, the dedup-horizon check (service and inbox window), and the test tuning only when given', () => {
    const deps = { sql: {} as never, databaseUrl: 'postgres://x', registry: {} as never, adminToken: 't', transport: {} as never, retention: { outboxDays: 1, inboxDays: 2 }, outboxMaxAttempts: 3, ...inboxDeps({ inbox: { maxRetries: 5, maxDeliveries: 7 } }) };
    const logger = pino({ level: 'silent' });
    const plain = consumerOptions('cases', deps, logger);
    expect(plain.maxRetries).toBe(5);
    expect(plain.horizon).toEqual({ service: 'cases', inboxDays: 2 });
    expect(plain.maxDeliveries).toBe(7);
    expect(plain.logger).toBe(logger);
    expect('prefetch' in plain || 'retryDelayMs' in plain).toBe(false);
    const retryDelayMs = (attempt: number) => attempt * 10;
    expect(consumerOptions('cases', { ...deps, consumers: { prefetch: 2, retryDelayMs } }, logger)).toMatchObject({ prefetch: 2, retryDelayMs });
  });
});
