// The boot helper against real PostgreSQL and the PostgreSQL bus: what it applies, the order it
// starts things in, and the reverse order they stop in (also after a failed start).
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { encodeEnvelope, MQ_MIGRATIONS, OutboxWorker } from '@craig/mq';
import { loadServiceSettings } from '@craig/settings';
import { eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from './app.ts';
import { bootService, loopTask } from './boot.ts';
import { Lifecycle } from './lifecycle.ts';

const dbs: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(dbs.splice(0).map((d) => d.drop()));
});

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  return { logger, lines, stoppedSteps: () => lines.filter((l) => l.msg === 'stopped').map((l) => l.step) };
}

async function setup(logins: 'single' | 'two' = 'single') {
  const [db, bus] = await Promise.all([testDatabase({ prefix: 'boot_t', max: 1 }), testDatabase({ prefix: 'boot_bus_t', max: 1 })]);
  dbs.push(db, bus);
  // Two logins: the runtime role logs in itself (trust auth on the test server) and the test
  // server's superuser migrates; single: the superuser does both.
  const runtimeUrl = Object.assign(new URL(db.url), { username: 'craig_cases_app', password: '' }).toString();
  const settings = loadServiceSettings('cases', {
    ...(logins === 'two' ? { CRAIG_CASES__DATABASE_URL: runtimeUrl, CRAIG_CASES__MIGRATION_DATABASE_URL: db.url } : { CRAIG_CASES__DATABASE_URL: db.url }),
    CRAIG_CASES__BUS_DATABASE_URL: bus.url,
    CRAIG_CASES__ADMIN_TOKEN: 'an-admin-token-for-tests-0123456789',
    CRAIG_CASES__HTTP_PORT: '0',
  });
  return { db, bus, settings, ...capturingLogger() };
}

describe('bootService', () => {
  it('migrates both databases, starts outbox → consumers → background → http, and stops in reverse', async () => {
    const { db, bus, settings, logger, stoppedSteps } = await setup();
    const life = new Lifecycle(logger);
    const order: string[] = [];
    const handled: string[] = [];
    try {
      const booted = await bootService(settings, logger, life, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 2 },
        build: (ctx) => {
          ctx.onStop('object store', async () => void order.push('object store closed'));
          const app = createHttpApp({ service: 'cases', logger: ctx.logger, registry: ctx.registry, adminToken: ctx.settings.adminToken });
          app.addHook('onReady', async () => void order.push('http'));
          const outbox = new OutboxWorker({ service: 'cases', sql: ctx.sql, databaseUrl: ctx.settings.databaseUrl, transport: ctx.transport, retention: ctx.settings.retention, maxAttempts: 3, registry: ctx.registry });
          return {
            app,
            outbox,
            consumers: [{ consumer: 'boot-test.cases', patterns: ['case.*'], handler: async (event) => void handled.push(event.eventType) }],
            background: [{ name: 'sweeper', start: () => void order.push('sweeper'), stop: async () => void order.push('sweeper stopped') }, loopTask('looper', async (signal) => {
              order.push('looper');
              await new Promise((resolve) => signal.addEventListener('abort', resolve));
            })],
          };
        },
      });
      expect(order).toEqual(['sweeper', 'looper', 'http']);
      expect(booted.address.port).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${booted.address.port}/healthz`)).status).toBe(200);
      const [own] = await db.sql`select to_regclass('event_outbox')::text as t`;
      const [busSet] = await bus.sql`select count(*)::int as n from craig_migrations where migration_set = 'bus'`;
      expect(own!.t).toBe('event_outbox');
      expect(busSet!.n).toBeGreaterThan(0);

      // The consumer is subscribed with the service's pool: a delivery lands in its inbox.
      const eventId = randomUUID();
      const body = encodeEnvelope({ eventId, eventType: 'case.opened', aggregateType: 'case', aggregateId: randomUUID(), source: 'cases', occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: '{}' });
      await booted.transport.publish([{ eventId, routingKey: 'case.opened', body }]);
      await eventually(() => expect(handled).toEqual(['case.opened']));
      // The handler runs inside the inbox transaction: its row is visible once that commits.
      await eventually(async () => expect(await db.sql`select consumer from event_inbox where event_id = ${eventId}`).toEqual([{ consumer: 'boot-test.cases' }]));
    } finally {
      await life.stop();
    }
    expect(stoppedSteps()).toEqual(['http', 'looper', 'sweeper', 'consumer boot-test.cases', 'outbox worker', 'object store', 'transport', 'database pool']);
    expect(order.slice(-2)).toEqual(['sweeper stopped', 'object store closed']);
  });

  it('a build that throws leaves only what had started (transport, pool) for the caller to stop', async () => {
    const { settings, logger, stoppedSteps } = await setup();
    const life = new Lifecycle(logger);
    await expect(
      bootService(settings, logger, life, {
        migrations: [MQ_MIGRATIONS],
        pool: { max: 1 },
        build: () => {
          throw new Error('bad wiring');
        },
      }),
    ).rejects.toThrow('bad wiring');
    await life.stop();
    expect(stoppedSteps()).toEqual(['transport', 'database pool']);
  });

  describe('the two logins of its database', () => {
    const bare = (ctx: { logger: pino.Logger; registry: Registry; settings: { adminToken: string } }) => ({
      app: createHttpApp({ service: 'cases', logger: ctx.logger, registry: ctx.registry, adminToken: ctx.settings.adminToken }),
    });

    it('migrates as the owner and runs as the runtime login, which owns nothing and may not change the schema', async () => {
      const { db, settings, logger, lines } = await setup('two');
      const life = new Lifecycle(logger);
      try {
        const booted = await bootService(settings, logger, life, { migrations: [MQ_MIGRATIONS], pool: { max: 1 }, build: bare });
        const [who] = await booted.sql`select session_user as login, current_user as role`;
        expect(who).toEqual({ login: 'craig_cases_app', role: 'craig_cases_app' });
        const [owner] = await db.sql`select tableowner from pg_tables where tablename = 'event_outbox'`;
        expect(owner!.tableowner).not.toBe('craig_cases_app');
        await expect(booted.sql`truncate event_outbox`).rejects.toMatchObject({ code: '42501' });
        expect(lines.some((l) => l.level === 40)).toBe(false);
      } finally {
        await life.stop();
      }
    });

    it('single-user: runs as the runtime role through SET ROLE and warns that the login owns its tables', async () => {
      const { settings, logger, lines } = await setup('single');
      const life = new Lifecycle(logger);
      try {
        const booted = await bootService(settings, logger, life, { migrations: [MQ_MIGRATIONS], pool: { max: 1 }, build: bare });
        const [who] = await booted.sql`select current_user as role`;
        expect(who!.role).toBe('craig_cases_app');
        const warning = lines.find((l) => l.level === 40);
        expect(warning).toMatchObject({ runtimeRole: 'craig_cases_app', superuser: true });
        expect(String(warning!.msg)).toContain('through SET ROLE, which a compromised process could undo');
      } finally {
        await life.stop();
      }
    });
  });
});
