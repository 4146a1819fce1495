import { randomUUID } from 'node:crypto';
import { migrationTemplate, type Sql } from '@craig/db';
import { eventually, testDatabase } from '@craig/testkit';
import { describe, expect, it } from 'vitest';
import { busDatabase, refusePoisonMessages } from '../test/helpers.ts';
import { transportContract } from '../test/transport-contract.ts';
import { createTransport } from './create-transport.ts';
import { BUS_MIGRATIONS } from './migrations.ts';
import { topicRegex } from './internal/topic.ts';
import { createPostgresBusTransport, PUBLISH_STATEMENT_BYTES } from './postgres-bus-transport.ts';

transportContract('PostgreSQL bus', async () => {
  const db = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bus', max: 1 });
  return {
    open: () => createPostgresBusTransport({ url: db.url, service: 'contract', maxMessageBytes: 64 * 1024, pollIntervalMs: 100 }),
    consumer: (label) => label,
    teardown: () => db.drop(),
  };
});

describe('PostgreSQL bus tables stay bounded', () => {
  it('acknowledged deliveries are deleted; dead letters are kept and counted until consumed', async () => {
    const db = await busDatabase(1);
    const transport = await createTransport({ kind: 'postgres', busDatabaseUrl: db.url }, { service: 'bounded' });
    try {
      expect(transport.kind).toBe('postgres');
      const ok: string[] = [];
      const sub = await transport.subscribe({ consumer: 'bounded', patterns: ['#'], maxRetries: 0, retryDelayMs: () => 0 }, async (d) => {
        if (d.routingKey === 'bad.one') throw new Error('refused');
        ok.push(d.eventId);
      });
      const messages = Array.from({ length: 25 }, (_, i) => ({ eventId: randomUUID(), routingKey: i < 3 ? 'bad.one' : 'good.one', body: '{}' }));
      await transport.publish(messages);
      await eventually(async () => expect(await transport.deadLetterCount()).toBe(3));
      await eventually(() => expect(ok).toHaveLength(22));
      await eventually(async () => expect((await db.sql`select count(*)::int as n from bus_deliveries`)[0]!.n).toBe(0));
      expect((await db.sql`select count(*)::int as n from bus_dead_letters`)[0]!.n).toBe(3);
      await sub.close();
      const dlq = await transport.subscribeDeadLetters({}, async () => {});
      await eventually(async () => expect(await transport.deadLetterCount()).toBe(0));
      await dlq.close();
    } finally {
      await transport.close();
      await db.drop();
    }
  });
});

/** A subscription to every key whose deliveries are stored, not consumed: the tests read bus_deliveries themselves. */
async function subscribeReader(sql: Sql): Promise<void> {
  await sql`insert into bus_subscriptions (consumer, patterns, pattern_regex) values ('reader', ${['#']}::text[], ${topicRegex(['#'])})`;
}

describe('a publish larger than one statement', () => {
  // ~3.5 statements' worth of bodies: the call is split, and must still behave as one statement.
  const BODY = 600;
  const count = Math.ceil((3.5 * PUBLISH_STATEMENT_BYTES) / BODY);
  const body = (i: number) => JSON.stringify({ i, pad: 'x'.repeat(BODY - 20 - String(i).length) });

  async function busWithRefusal() {
    const db = await busDatabase(1);
    await subscribeReader(db.sql);
    await refusePoisonMessages(db.sql);
    const transport = await createPostgresBusTransport({ url: db.url, service: 'split', pollIntervalMs: 100 });
    return { db, transport };
  }

  it('keeps publish order across its statements', async () => {
    const { db, transport } = await busWithRefusal();
    try {
      const messages = Array.from({ length: count }, (_, i) => ({ eventId: randomUUID(), routingKey: 'case.opened', body: body(i) }));
      const outcomes = await transport.publish(messages);
      expect(outcomes.filter((o) => o.ok)).toHaveLength(count);
      const rows = await db.sql<{ event_id: string; body: string }[]>`select event_id, body from bus_deliveries order by id`;
      expect(rows.map((r) => r.event_id)).toEqual(messages.map((m) => m.eventId));
      expect(rows.map((r) => r.body)).toEqual(messages.map((m) => m.body));
    } finally {
      await transport.close();
      await db.drop();
    }
  });

  it('is all or nothing: a message refused in its last statement leaves no row of the earlier ones behind', async () => {
    const { db, transport } = await busWithRefusal();
    try {
      const messages = Array.from({ length: count }, (_, i) => ({ eventId: randomUUID(), routingKey: i === count - 1 ? 'poison.event' : 'case.opened', body: body(i) }));
      const outcomes = await transport.publish(messages);
      // The refused call is isolated message by message: only the culprit is refused.
      expect(outcomes.slice(0, -1).every((o) => o.ok)).toBe(true);
      expect(outcomes.at(-1)).toMatchObject({ ok: false, kind: 'rejected' });
      // Every other message exactly once: had the first statements committed on their own, the
      // isolation would have delivered them a second time.
      const [n] = await db.sql<{ rows: number; distinct: number }[]>`select count(*)::int as rows, count(distinct event_id)::int as distinct from bus_deliveries`;
      expect(n).toEqual({ rows: count - 1, distinct: count - 1 });
      const ids = await db.sql<{ event_id: string }[]>`select event_id from bus_deliveries order by id`;
      expect(ids.map((r) => r.event_id)).toEqual(messages.slice(0, -1).map((m) => m.eventId));
    } finally {
      await transport.close();
      await db.drop();
    }
  });
});

describe('bodies arrive byte for byte', () => {
  // One, two, three and four bytes a character in UTF-8; the publish sends the bodies as one
  // buffer of their bytes, split on a one-byte separator.
  const texts = ['plain', 'é à ü', '€ 中文 ・', '😀🎉 𝄞', '', 'mixed é€😀 end', '"quoted\\\\ \\n"'];

  async function published(bodies: readonly string[]) {
    const db = await busDatabase(1);
    try {
      await subscribeReader(db.sql);
      const transport = await createPostgresBusTransport({ url: db.url, service: 'bytes', pollIntervalMs: 100 });
      try {
        const messages = bodies.map((body) => ({ eventId: randomUUID(), routingKey: 'case.opened', body }));
        const outcomes = await transport.publish(messages);
        expect(outcomes.every((o) => o.ok)).toBe(true);
        const rows = await db.sql<{ body: string; bytes: number }[]>`select body, octet_length(body) as bytes from bus_deliveries order by id`;
        // One transaction: a call the bus refused would have been sent again message by
        // message (each in a transaction of its own), and come out right all the same.
        const [tx] = await db.sql<{ n: number }[]>`select count(distinct xmin::text)::int as n from bus_deliveries`;
        expect(tx!.n).toBe(1);
        return rows;
      } finally {
        await transport.close();
      }
    } finally {
      await db.drop();
    }
  }

  it('multi-byte characters, empty bodies first, between and last, in one statement', async () => {
    const bodies = ['', ...texts, ''];
    const rows = await published(bodies);
    expect(rows.map((r) => r.body)).toEqual(bodies);
    expect(rows.map((r) => r.bytes)).toEqual(bodies.map((b) => Buffer.byteLength(b)));
  });

  it('a body holding the separator sends the call as JSON, the others unchanged', async () => {
    const bodies = [...texts, 'a\x1eb'];
    expect((await published(bodies)).map((r) => r.body)).toEqual(bodies);
  });

  it('four-byte characters across several statements', async () => {
    // ~2.5 statements of bodies of 4-byte characters, each ~40 KiB.
    const count = Math.ceil((2.5 * PUBLISH_STATEMENT_BYTES) / 40_000);
    const bodies = Array.from({ length: count }, (_, i) => `${i}:${'😀'.repeat(10_000)}${texts[i % texts.length]}`);
    const rows = await published(bodies);
    expect(rows).toHaveLength(count);
    expect(rows.every((r, i) => r.body === bodies[i])).toBe(true);
  });
});
