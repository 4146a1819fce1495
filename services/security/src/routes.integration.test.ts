// The read API: bounded, validated, every refusal naming the parameter and its value.
import { expectEventAdminRoutes, expectRefusedQuery, expectServiceEndpoints } from '@craig/service-testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'security_api' });
  await h.db.sql`
    insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, occurred_at, received_at)
    select gen_random_uuid(), case when g % 2 = 0 then 'case.opened' else 'placement.started' end, 'x', 'a-' || g, 'cases',
           jsonb_build_object('n', g), now() - make_interval(hours => g), now() - make_interval(hours => g)
    from generate_series(1, 10) g`;
  await h.db.sql`
    insert into dead_letter_audit (consumer, message_id, routing_key, error, attempts, deliveries, body, dead_lettered_at, received_at)
    select 'cases.flaky', 'm-' || g, 'placement.started', 'boom', 2, case when g = 1 then 2 end, 'raw', now() - make_interval(mins => g), now() - make_interval(mins => g)
    from generate_series(1, 3) g`;
});
afterAll(() => h.drop());

describe('GET /v1/audit', () => {
  it('lists newest first, filtered by event type and since, bounded by limit', async () => {
    const all = await call(h.app, 'GET', '/v1/audit');
    expect(all.status).toBe(200);
    expect(all.body.events.map((e: { aggregateId: string }) => e.aggregateId)).toEqual(Array.from({ length: 10 }, (_, i) => `a-${i + 1}`));
    expect(all.body.events[0]).toMatchObject({ eventType: 'placement.started', source: 'cases', payload: { n: 1 }, headers: {}, receivedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/) });

    const since = new Date(Date.now() - 4.5 * 3_600_000).toISOString();
    const filtered = await call(h.app, 'GET', `/v1/audit?eventType=case.opened&since=${encodeURIComponent(since)}&limit=1`);
    expect(filtered.status).toBe(200);
    expect(filtered.body.events.map((e: { aggregateId: string }) => e.aggregateId)).toEqual(['a-2']);
    const window = await call(h.app, 'GET', `/v1/audit?eventType=case.opened&since=${encodeURIComponent(since)}`);
    expect(window.body.events.map((e: { aggregateId: string }) => e.aggregateId)).toEqual(['a-2', 'a-4']);
  });

  it.each([
    ['limit=0', 'limit', '0'],
    ['limit=501', 'limit', '501'],
    ['limit=ten', 'limit', 'ten'],
    ['limit=1.5', 'limit', '1.5'],
    ['since=yesterday', 'since', 'yesterday'],
    ['since=2026-13-45', 'since', '2026-13-45'],
    ['eventType=case%20opened', 'eventType', 'case opened'],
    ['eventType=case..opened', 'eventType', 'case..opened'],
    ['actor=me', 'actor', 'me'],
  ])('refuses %s with a typed 400 naming the value', (query, parameter, value) => expectRefusedQuery(h.app, `/v1/audit?${query}`, parameter, value));

  it('refuses a repeated parameter', () => expectRefusedQuery(h.app, '/v1/audit?limit=1&limit=2', 'limit', ['1', '2']));
});

describe('GET /v1/dead-letters', () => {
  it('lists newest first, bounded and validated', async () => {
    const res = await call(h.app, 'GET', '/v1/dead-letters?limit=2');
    expect(res.status).toBe(200);
    expect(res.body.deadLetters.map((d: { messageId: string }) => d.messageId)).toEqual(['m-1', 'm-2']);
    expect(res.body.deadLetters[0]).toMatchObject({ consumer: 'cases.flaky', routingKey: 'placement.started', error: 'boom', attempts: 2, deliveries: 2, body: 'raw', eventId: null });
    // A letter audited before deliveries were counted.
    expect(res.body.deadLetters[1]).toMatchObject({ messageId: 'm-2', deliveries: null });
    const bad = await call(h.app, 'GET', '/v1/dead-letters?limit=-1');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', parameter: 'limit', value: '-1' });
  });
});

describe('service endpoints', () => {
  it('serves health, readiness, metrics and the event admin routes behind the token', async () => {
    await expectServiceEndpoints(h.app, 'security', 'archive_batches_total');
    expect(await expectEventAdminRoutes(h.app, { windowMs: 3_600_000 })).toMatchObject({ replayed: 0 });
  });
});
