import { migrationTemplate } from '@craig/db';
import { BUS_MIGRATIONS, PUBLISH_STATEMENT_BYTES } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPS, HEADERS_JSON, messagesOf, startBusContender, subscribeSink, type BusContender } from './bus-contender.ts';
import { outboxCopy } from './fixtures.ts';

const EVENTS = 1_200;

describe('bench drain: the bus contenders, each in a process of its own', () => {
  let outbox: TestDatabase;
  let bus: TestDatabase;
  const started: BusContender[] = [];
  beforeAll(async () => {
    outbox = await outboxCopy(EVENTS, { pending: 'all' });
    await outbox.sql`create table bench_pending as select * from event_outbox`;
    bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bench', max: 1 });
    await subscribeSink(bus.sql);
  }, 120_000);
  /** Deliveries whose headers are the drain's, stored as the JSON object our publish stores (not a JSON string of it). */
  const withHeaderObjects = async () => {
    const [{ objects } = { objects: 0 }] = await bus.sql<{ objects: number }[]>`select count(*)::int as objects from bus_deliveries where headers = ${HEADERS_JSON}::text::jsonb and jsonb_typeof(headers) = 'object'`;
    return objects;
  };
  afterAll(async () => {
    for (const c of started) await c.close().catch(() => {});
    await bus?.drop();
    await outbox?.drop();
  });

  it('the bare INSERT writes the pending messages byte for byte, with or without the headers, reports its own CPU, and survives a failed run', async () => {
    const bare = await startBusContender({ kind: 'bare', outboxUrl: outbox.url, pendingTable: 'bench_pending', busUrl: bus.url, batchSize: 500 });
    started.push(bare);
    const first = await bare.run();
    expect(first.published).toBe(EVENTS);
    // Encoding and sending 1,200 rows costs the child CPU; a process that did not measure itself reports 0.
    expect(first.nodeMs).toBeGreaterThan(0);
    const expected = await messagesOf(outbox.sql, 'bench_pending');
    const rows = await bus.sql<{ event_id: string; routing_key: string; body: string; headers: Record<string, unknown> }[]>`select event_id::text, routing_key, body, headers from bus_deliveries order by id`;
    expect(rows.map((r) => [r.event_id, r.routing_key, r.body])).toEqual(expected.map((m) => [m.eventId, m.routingKey, m.body]));
    // The drain's headers, as the JSON object our publish stores (not a JSON string of it).
    expect(await withHeaderObjects()).toBe(EVENTS);
    await bus.sql`truncate bus_delivery_counts, bus_deliveries`;

    expect((await bare.run({ headers: false })).published).toBe(EVENTS);
    const [{ empty } = { empty: 0 }] = await bus.sql<{ empty: number }[]>`select count(*)::int as empty from bus_deliveries where headers = '{}'::jsonb`;
    expect(empty).toBe(EVENTS);
    await bus.sql`truncate bus_delivery_counts, bus_deliveries`;

    // A run that fails comes back as an error that names its cause, and the process goes on.
    await bus.sql`alter table bus_deliveries rename to bus_deliveries_away`;
    try {
      await expect(bare.run()).rejects.toThrow(/bare bus contender failed: .*bus_deliveries/);
    } finally {
      await bus.sql`alter table bus_deliveries_away rename to bus_deliveries`;
    }
    expect((await bare.run()).published).toBe(EVENTS);
    const [{ n } = { n: 0 }] = await bus.sql<{ n: number }[]>`select count(*)::int as n from bus_deliveries`;
    expect(n).toBe(EVENTS);
    await bus.sql`truncate bus_delivery_counts, bus_deliveries`;
  }, 60_000);

  it('a contender process killed from outside is reported by the next run and by close, naming the signal', async () => {
    const bare = await startBusContender({ kind: 'bare', outboxUrl: outbox.url, pendingTable: 'bench_pending', busUrl: bus.url, batchSize: 500 });
    process.kill(bare.pid!, 'SIGKILL');
    await expect(bare.run()).rejects.toThrow(/bare bus contender process ended before it answered \(killed by SIGKILL\)/);
    await expect(bare.close()).rejects.toThrow(/bare bus contender process killed by SIGKILL/);
    const [{ n } = { n: -1 }] = await bus.sql<{ n: number }[]>`select count(*)::int as n from bus_deliveries`;
    expect(n).toBe(0);
  });

  it("the bare INSERT sends our publishes' statements: a claim's messages split at the publish's byte bound, greedily", async () => {
    // 1,200 bodies of ~600 bytes in one claim: more than one statement's bound.
    const bare = await startBusContender({ kind: 'bare', outboxUrl: outbox.url, pendingTable: 'bench_pending', busUrl: bus.url, batchSize: 4_000 });
    started.push(bare);
    expect((await bare.run()).published).toBe(EVENTS);
    // Each autocommit statement is its own transaction: its rows share an xmin.
    const statements = await bus.sql<{ bytes: number; first: number; last: number }[]>`
      select sum(octet_length(body))::int as bytes, min(id)::int as first, max(id)::int as last
      from bus_deliveries group by xmin::text order by min(id)`;
    const sizes = (await bus.sql<{ id: number; bytes: number }[]>`select id::int, octet_length(body) as bytes from bus_deliveries order by id`).map((r) => r.bytes);
    await bus.sql`truncate bus_delivery_counts, bus_deliveries`;
    expect(statements.length).toBeGreaterThan(1);
    const firstId = statements[0]!.first;
    for (const [i, s] of statements.entries()) {
      expect(s.bytes).toBeLessThanOrEqual(PUBLISH_STATEMENT_BYTES);
      // Consecutive, and no statement ended while the next message still fitted.
      if (i > 0) expect(s.first).toBe(statements[i - 1]!.last + 1);
      if (i < statements.length - 1) expect(s.bytes + sizes[s.last + 1 - firstId]!).toBeGreaterThan(PUBLISH_STATEMENT_BYTES);
    }
  }, 60_000);

  it('our drain publishes every pending event once per run, on the same backends from one run to the next', async () => {
    const ours = await startBusContender({ kind: 'ours', outboxUrl: outbox.url, busUrl: bus.url, batchSize: 500, lanes: 2, walCompression: 'lz4' });
    started.push(ours);
    const pids = async () => (await outbox.sql<{ pid: number }[]>`select pid from pg_stat_activity where application_name = ${APPS.outbox} order by pid`).map((r) => r.pid);
    const counts = async () => {
      const [{ pending } = { pending: -1 }] = await outbox.sql<{ pending: number }[]>`select count(*)::int as pending from event_outbox where published_at is null`;
      const [{ delivered } = { delivered: -1 }] = await bus.sql<{ delivered: number }[]>`select count(*)::int as delivered from bus_deliveries`;
      return { pending, delivered };
    };
    const first = await ours.run();
    expect(first).toMatchObject({ published: EVENTS });
    expect(first.nodeMs).toBeGreaterThan(0);
    expect(await counts()).toEqual({ pending: 0, delivered: EVENTS });
    // The bare INSERT's rows are compared with these: the same headers, stored the same way.
    expect(await withHeaderObjects()).toBe(EVENTS);
    const afterFirst = await pids();
    expect(afterFirst.length).toBeGreaterThan(0);

    // Nothing pending: a second run publishes nothing.
    expect((await ours.run()).published).toBe(0);
    expect(await counts()).toEqual({ pending: 0, delivered: EVENTS });

    // Pending again, as the benchmark restores it: the same pool's backends drain it.
    await outbox.sql`truncate event_outbox`;
    await outbox.sql`insert into event_outbox select * from bench_pending order by id`;
    await bus.sql`truncate bus_delivery_counts, bus_deliveries`;
    expect((await ours.run()).published).toBe(EVENTS);
    expect(await counts()).toEqual({ pending: 0, delivered: EVENTS });
    expect(await pids()).toEqual(afterFirst);
  }, 60_000);
});
