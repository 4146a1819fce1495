// The outbox's whole life as the service's runtime role (ADR-063, ADR-078): staging queues the
// row, the drain takes ids out of the queue (its FOR UPDATE needs an UPDATE right there), a
// counted failure puts the id back with a backoff, an unreachable transport puts it back as it
// was, a park takes it out, redrive and replay put ids back (replay under the sweep's lock), and
// the sweep deletes only published rows. Each step with exact counts, logged in as that role.
import { randomBytes } from 'node:crypto';
import { createClient, migrate, type Sql } from '@craig/db';
import { dropRoles, eventually, testDatabase, type TestDatabase } from '@craig/testkit';
import postgres from 'postgres';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busDatabase, refusePoisonMessages } from '../test/helpers.ts';
import { MQ_MIGRATIONS } from './migrations.ts';
import { OutboxWorker } from './outbox-worker.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { redriveParked } from './redrive.ts';
import { replayEvents } from './replay.ts';
import { retentionOverrun, transportRetentionSpecs } from './retention-overrun.ts';
import { stageEvent } from './stage-event.ts';
import { pruneTransportTables } from './transport-prune.ts';
import type { Subscription, Transport } from './transport.ts';

const role = `craig_t_mq_${randomBytes(5).toString('hex')}`;
const windows = { outboxDays: 30, inboxDays: 31 };
let db: TestDatabase;
let bus: TestDatabase;
let url: string;
let runtime: Sql;
let transport: Transport;
let observer: Subscription;

beforeAll(async () => {
  [db, bus] = await Promise.all([testDatabase({ prefix: 'craig_mq_rt' }), busDatabase(1)]);
  await migrate(db.url, [MQ_MIGRATIONS], { service: 'cases', runtime: { role } });
  url = Object.assign(new URL(db.url), { username: role }).toString();
  runtime = createClient(url, { service: 'cases-runtime', max: 3 });
  transport = await createPostgresBusTransport({ url: bus.url, service: 'cases', pollIntervalMs: 50 });
  // A subscriber, so that messages are routed (and the poison one refused by the bus).
  observer = await transport.subscribe({ consumer: 'observer', patterns: ['#'], maxRetries: 0, prefetch: 1 }, async () => undefined);
  await refusePoisonMessages(bus.sql);
});

afterAll(async () => {
  await observer.close();
  await transport.close();
  await runtime.end();
  await Promise.all([db.drop(), bus.drop()]);
  const admin = postgres(Object.assign(new URL(db.url), { pathname: '/postgres' }).toString(), { max: 1, onnotice: () => {} });
  try {
    await dropRoles(admin, [role]);
  } finally {
    await admin.end({ timeout: 1 });
  }
});

const worker = (t: Transport = transport) => new OutboxWorker({ service: 'cases', sql: runtime, databaseUrl: url, transport: t, retention: windows, maxAttempts: 2, registry: new Registry() });
const stage = (eventType: string, n: number) =>
  runtime.begin(async (tx) => {
    for (let i = 0; i < n; i++) await stageEvent(tx, { aggregateType: 'case', aggregateId: `${eventType}-${i}`, eventType, payload: { i } });
  });
/** Outbox rows by state, read by the owner. */
async function states(): Promise<{ pending: number; parked: number; published: number; due: number }> {
  const [row] = await db.sql<{ pending: number; parked: number; published: number; due: number }[]>`
    select count(*) filter (where q.id is not null)::int as pending,
           count(*) filter (where o.parked_at is not null)::int as parked,
           count(*) filter (where q.id is null and o.parked_at is null)::int as published,
           count(*) filter (where q.id is not null and q.next_attempt_at is null)::int as due
    from event_outbox o left join event_outbox_queue q on q.id = o.id`;
  return row!;
}

describe('the outbox as the runtime role', () => {
  it('stages, drains, retries, parks, redrives, replays and sweeps with the grants it has and no more', async () => {
    expect((await runtime`select current_user as who`)[0]!.who).toBe(role);
    await stage('case.opened', 5);
    await stage('poison.event', 1);
    expect(await states()).toEqual({ pending: 6, parked: 0, published: 0, due: 6 });

    // An unreachable transport: every id goes back as it was, no attempt counted.
    const closed = await createPostgresBusTransport({ url: bus.url, service: 'closed' });
    await closed.close();
    expect(await worker(closed).drainOnce()).toMatchObject({ claimed: 6, published: 0, unavailable: 6 });
    expect(await states()).toEqual({ pending: 6, parked: 0, published: 0, due: 6 });

    // The bus refuses the poison message: it goes back with a backoff; the rest are published.
    expect(await worker().drainOnce()).toEqual({ claimed: 6, published: 5, failed: 1, parked: 0, unavailable: 0 });
    expect(await states()).toEqual({ pending: 1, parked: 0, published: 5, due: 0 });
    expect(await worker().drainOnce()).toMatchObject({ claimed: 0 });
    // Due again (the owner moves the clock of the backoff): the second failure parks it.
    await db.sql`update event_outbox_queue set next_attempt_at = now() - interval '1 second'`;
    expect(await worker().drainOnce()).toMatchObject({ claimed: 1, failed: 0, parked: 1 });
    expect(await states()).toEqual({ pending: 0, parked: 1, published: 5, due: 0 });
    expect(await worker().refreshGauges()).toEqual({ pending: 0, parked: 1 });

    // Redrive puts the parked row back in the queue with a fresh budget.
    expect(await redriveParked(runtime, windows)).toEqual({ redriven: 1, refused: 0 });
    expect(await states()).toEqual({ pending: 1, parked: 0, published: 5, due: 1 });
    await db.sql`delete from event_outbox_queue`; // published after all (as far as the sweep can tell)

    // Age everything past the window; replay the two newest, then sweep.
    await db.sql`update event_outbox set created_at = now() - interval '40 days' - make_interval(secs => id::int)`;
    await db.sql`update event_outbox set created_at = now() - interval '2 days' - make_interval(secs => id::int) where id in (select id from event_outbox where event_type = 'case.opened' order by id desc limit 2)`;
    expect((await replayEvents(runtime, { from: new Date(Date.now() - 3 * 86_400_000), to: new Date() }, windows)).replayed).toBe(2);
    expect(await states()).toEqual({ pending: 2, parked: 0, published: 4, due: 2 });
    const overrun = await retentionOverrun(runtime, transportRetentionSpecs(windows)[0]);
    expect(overrun).toMatchObject({ ok: false, overdueRows: 4 });
    expect(await pruneTransportTables({ databaseUrl: url, service: 'cases', retention: windows })).toMatchObject({ skipped: false, outboxDeleted: 4 });
    expect(await states()).toEqual({ pending: 2, parked: 0, published: 0, due: 2 });
    expect(await worker().drainOnce()).toMatchObject({ claimed: 2, published: 2 });
    await eventually(async () => expect(await states()).toEqual({ pending: 0, parked: 0, published: 2, due: 0 }));
  });

  it('may not rewrite what an event says, nor empty the queue wholesale', async () => {
    await expect(runtime`update event_outbox set payload = '{}'`).rejects.toMatchObject({ code: '42501' });
    await expect(runtime`update event_outbox_queue set id = id + 1`).rejects.toMatchObject({ code: '42501' });
    await expect(runtime`truncate event_outbox_queue`).rejects.toMatchObject({ code: '42501' });
  });
});
