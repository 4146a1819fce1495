// main.ts as an operator runs it: a child process configured only through the environment,
// consuming case.* from the bus and publishing its own events there.
import { randomUUID } from 'node:crypto';
import { migrationTemplate } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, decodeEnvelope, type EventEnvelope } from '@craig/mq';
import { ADMIN_TOKEN, caseEventBody, serviceEnv, startMain as start, waitReady } from '@craig/service-testkit';
import { eventually, freePort, testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const MAIN = new URL('./main.ts', import.meta.url);
const dbs: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(dbs.splice(0).map((d) => d.drop()));
});

describe('placements main.ts', () => {
  it('consumes case.opened from the bus, accepts a placement, publishes placement.started, stops in reverse order', async () => {
    const [db, bus] = await Promise.all([testDatabase({ prefix: 'placements_t', max: 1 }), testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), max: 1 })]);
    dbs.push(db, bus);
    const transport = await createPostgresBusTransport({ url: bus.url, service: 'cases' });
    const seen: EventEnvelope[] = [];
    const listener = await transport.subscribe({ consumer: 'main-test.listener', patterns: ['placement.*'], maxRetries: 0 }, async (d) => void seen.push(decodeEnvelope(d.body)));
    const port = await freePort();
    const proc = start(MAIN, serviceEnv('placements', { databaseUrl: db.url, busDatabaseUrl: bus.url, adminToken: ADMIN_TOKEN, port, runtimeRole: 'craig_placements_app' }));
    try {
      await waitReady(port, 20_000);
      // The consumer is subscribed once the service is ready, so this case.opened reaches it.
      const caseId = randomUUID();
      const eventId = randomUUID();
      expect(await transport.publish([{ eventId, routingKey: 'case.opened', body: caseEventBody('case.opened', caseId, eventId) }])).toEqual([{ ok: true }]);
      let placementId = '';
      await eventually(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/placements`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ caseId, provider: 'from main' }) });
        expect(res.status).toBe(201);
        placementId = ((await res.json()) as { id: string }).id;
      }, { timeoutMs: 15_000 });
      await eventually(() => expect(seen.map((e) => [e.eventType, e.aggregateId, e.source])).toEqual([['placement.started', placementId, 'placements']]), { timeoutMs: 15_000 });
      expect(await proc.terminate()).toEqual({ code: 0, stopped: ['http', 'consumer placements.cases', 'outbox worker', 'transport', 'database pool'] });
    } finally {
      proc.child.kill('SIGKILL');
      await listener.close();
      await transport.close();
    }
  });
});
