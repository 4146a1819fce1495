import { randomUUID } from 'node:crypto';
import { migrationTemplate } from '@craig/db';
import { eventually, testDatabase } from '@craig/testkit';
import { describe, expect, it } from 'vitest';
import { busDatabase } from '../test/helpers.ts';
import { transportContract } from '../test/transport-contract.ts';
import { createTransport } from './create-transport.ts';
import { BUS_MIGRATIONS } from './migrations.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';

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
