// The consumer side of the fleet-wide dedup horizon on a real database: a delivery whose
// producer may replay past this consumer's dedup records is still processed, counted on every
// delivery, warned about once an hour per producer, and recorded (at most hourly, at once on a
// change) where `pnpm xtask invariants` reads it. And the outbox worker puts its windows on
// every message it publishes.
import { randomUUID } from 'node:crypto';
import { createClient, type Sql } from '@craig/db';
import { eventually, type TestDatabase } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { captureLogs, WARN } from '../test/log-capture.ts';
import { busDatabase, serviceDatabase } from '../test/helpers.ts';
import { readDedupHorizonObservations, retentionHeaders } from './dedup-horizon.ts';
import { encodeEnvelope } from './envelope.ts';
import { inboxHandler } from './inbox.ts';
import { OutboxWorker } from './outbox-worker.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { stageEvent } from './stage-event.ts';
import type { Delivery } from './transport.ts';

let db: TestDatabase;
let pool: Sql;
beforeAll(async () => {
  db = await serviceDatabase(2);
  pool = createClient(db.url, { service: 'horizon-test', max: 3 });
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});
beforeEach(async () => {
  await db.sql`truncate event_inbox, dedup_horizon_observations`;
});

function delivery(source: string, headers: Record<string, string>, eventId = randomUUID()): Delivery {
  const body = encodeEnvelope({ eventId, eventType: 'case.opened', aggregateType: 'case', aggregateId: '1', source, occurredAt: new Date().toISOString(), headersJson: '{}', payloadJson: '{}' });
  return { consumer: 'placements.cases', eventId, routingKey: 'case.opened', body, headers, attempt: 1, deliveries: 1, redelivered: false };
}

async function counter(registry: Registry, name: string): Promise<Array<{ labels: Partial<Record<string, string | number>>; value: number }>> {
  return ((await registry.getMetricsAsJSON()).find((m) => m.name === name)?.values ?? []).map((v) => ({ labels: v.labels, value: v.value }));
}

/** A placements-like consumer keeping its dedup records `inboxDays`, on a clock the test moves. */
function consumer(inboxDays: number) {
  const registry = new Registry();
  const { logger, lines } = captureLogs('warn');
  let now = Date.parse('2025-03-01T12:00:00Z');
  let handled = 0;
  const handle = inboxHandler({
    sql: pool,
    consumer: 'placements.cases',
    registry,
    logger,
    horizon: { service: 'placements', inboxDays, clock: () => now },
    handler: async () => void handled++,
  });
  return {
    handle,
    registry,
    warnings: () => lines.filter((l) => l.level === WARN && l.msg.startsWith('dedup horizon violated')),
    handled: () => handled,
    advance: (ms: number) => (now += ms),
  };
}

const observedAt = async () => (await db.sql<{ producer: string; observed_at: Date }[]>`select producer, observed_at from dedup_horizon_observations order by producer`).map((r) => [r.producer, r.observed_at.getTime()]);

describe('a consumer checks every delivery against its inbox window', () => {
  it("processes a violating event, counts every delivery, warns once an hour naming both services, variables and values", async () => {
    const c = consumer(30);
    const cases = retentionHeaders({ outboxDays: 30, inboxDays: 31 });
    const first = delivery('cases', cases);
    await c.handle(first);
    await c.handle(first); // a duplicate is checked too
    await c.handle(delivery('cases', cases));
    expect(c.handled()).toBe(2);
    expect((await db.sql`select count(*)::int as n from event_inbox`)[0]!.n).toBe(2);
    expect(await counter(c.registry, 'dedup_horizon_violations_total')).toEqual([{ labels: { producer: 'cases', consumer: 'placements' }, value: 3 }]);

    const warnings = c.warnings();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ producer: 'cases', consumer: 'placements', subscription: 'placements.cases', producerOutboxDays: 30, consumerInboxDays: 30, replayDays: 30 });
    for (const part of ['cases may replay 30 days back', 'CRAIG_CASES__EVENT_OUTBOX_RETENTION_DAYS=30', 'placements keeps its dedup records 30 days', 'CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS=30', 'must be at least 31', 'still processed']) {
      expect(warnings[0]!.msg).toContain(part);
    }

    expect(await readDedupHorizonObservations(db.sql)).toEqual([
      { consumer: 'placements.cases', producer: 'cases', producerOutboxDays: 30, producerInboxDays: 31, consumerInboxDays: 30, violated: true, observedAt: expect.any(Date) },
    ]);

    // Within the hour: no second warning, no second write (the row keeps an explicit past time).
    await db.sql`update dedup_horizon_observations set observed_at = now() - interval '50 minutes'`;
    const before = await observedAt();
    c.advance(59 * 60_000);
    await c.handle(delivery('cases', cases));
    expect(c.warnings()).toHaveLength(1);
    expect(await observedAt()).toEqual(before);

    // An hour after the first: warned and recorded again.
    c.advance(60_000);
    await c.handle(delivery('cases', cases));
    expect(c.warnings()).toHaveLength(2);
    expect((await observedAt())[0]![1]).toBeGreaterThan(before[0]![1] as number);
    expect(await counter(c.registry, 'dedup_horizon_violations_total')).toEqual([{ labels: { producer: 'cases', consumer: 'placements' }, value: 5 }]);
  });

  it('warns per producer, and records a changed verdict at once (the invariant turns green without waiting an hour)', async () => {
    const c = consumer(31);
    await c.handle(delivery('cases', retentionHeaders({ outboxDays: 30, inboxDays: 31 })));
    await c.handle(delivery('rules', retentionHeaders({ outboxDays: 45, inboxDays: 46 })));
    await c.handle(delivery('safety', retentionHeaders({ outboxDays: 31, inboxDays: 32 })));
    expect(c.warnings().map((w) => w.producer)).toEqual(['rules', 'safety']);
    expect((await readDedupHorizonObservations(db.sql)).map((o) => [o.producer, o.violated])).toEqual([
      ['cases', false],
      ['rules', true],
      ['safety', true],
    ]);
    // rules moves its outbox window back within ours: recorded within the same minute.
    c.advance(60_000);
    await c.handle(delivery('rules', retentionHeaders({ outboxDays: 30, inboxDays: 31 })));
    expect((await readDedupHorizonObservations(db.sql)).find((o) => o.producer === 'rules')).toMatchObject({ producerOutboxDays: 30, violated: false });
    expect(await counter(c.registry, 'dedup_horizon_violations_total')).toEqual([
      { labels: { producer: 'rules', consumer: 'placements' }, value: 1 },
      { labels: { producer: 'safety', consumer: 'placements' }, value: 1 },
    ]);
  });

  it('a producer without the headers (an older one) is not checked but counted separately; a consumer keeping its records forever is never violated', async () => {
    const c = consumer(30);
    await c.handle(delivery('legacy', {}));
    await c.handle(delivery('odd', { 'craig-outbox-retention-days': 'thirty' }));
    expect(c.handled()).toBe(2);
    expect(await counter(c.registry, 'dedup_horizon_unchecked_total')).toEqual([
      { labels: { producer: 'legacy', consumer: 'placements', reason: 'missing' }, value: 1 },
      { labels: { producer: 'odd', consumer: 'placements', reason: 'malformed' }, value: 1 },
    ]);
    expect(await readDedupHorizonObservations(db.sql)).toEqual([]);

    const forever = consumer(0);
    await forever.handle(delivery('cases', retentionHeaders({ outboxDays: 0, inboxDays: 0 })));
    expect(forever.warnings()).toEqual([]);
    expect((await readDedupHorizonObservations(db.sql))[0]).toMatchObject({ producer: 'cases', violated: false, consumerInboxDays: 0 });
  });
});

describe('the outbox worker', () => {
  it('puts its windows on every message it publishes', async () => {
    const bus = await busDatabase(1);
    const transport = await createPostgresBusTransport({ url: bus.url, service: 'horizon-test', pollIntervalMs: 100 });
    try {
      const seen: Delivery[] = [];
      const sub = await transport.subscribe({ consumer: 'listener', patterns: ['#'], maxRetries: 0 }, async (d) => void seen.push(d));
      await db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'case', aggregateId: '1', eventType: 'case.opened', payload: {}, headers: { trace: 't-1' } }));
      const worker = new OutboxWorker({ service: 'cases', sql: pool, databaseUrl: db.url, transport, retention: { outboxDays: 12, inboxDays: 13 }, maxAttempts: 3, registry: new Registry() });
      expect((await worker.drain()).published).toBe(1);
      await eventually(() => expect(seen).toHaveLength(1));
      expect(seen[0]!.headers).toEqual({ 'craig-outbox-retention-days': '12', 'craig-inbox-retention-days': '13' });
      // The staged event's own headers stay in the envelope.
      expect(JSON.parse(seen[0]!.body).headers).toEqual({ trace: 't-1' });
      await sub.close();
    } finally {
      await transport.close();
      await bus.drop();
      await db.sql`truncate event_outbox`;
    }
  });
});
