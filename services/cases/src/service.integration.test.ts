// The cases HTTP API against a real database: every write stages its event in the same
// transaction, every refusal carries its code and writes nothing.
import { decodeEnvelope, type Delivery } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { expectEventAdminRoutes } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, casesHarness, type CasesHarness } from '../test/harness.ts';
import { closeCase, openCase } from './case-store.ts';

let h: CasesHarness;
beforeAll(async () => {
  h = await casesHarness();
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate cases, event_outbox`;
});

const counts = async () => {
  const [row] = await h.db.sql<{ cases: number; events: number }[]>`select (select count(*) from cases)::int as cases, (select count(*) from event_outbox)::int as events`;
  return row!;
};
const events = () => h.db.sql<{ event_type: string; aggregate_id: string; payload: Record<string, unknown> }[]>`select event_type, aggregate_id, payload from event_outbox order by id`;
const MISSING = '00000000-0000-4000-8000-000000000000';

describe('cases API', () => {
  it('opens a case (201 with id and openedAt) and stages case.opened with it', async () => {
    const res = await call(h.app, 'POST', '/v1/cases', { subject: '  Family A  ' });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['id', 'openedAt']);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const [row] = await h.db.sql`select subject, opened_at, closed_at from cases where id = ${res.body.id}`;
    expect(row).toMatchObject({ subject: 'Family A', closed_at: null });
    expect((row!.opened_at as Date).toISOString()).toBe(res.body.openedAt);
    expect(await events()).toEqual([{ event_type: 'case.opened', aggregate_id: res.body.id, payload: { caseId: res.body.id, openedAt: res.body.openedAt } }]);
    const got = await call(h.app, 'GET', `/v1/cases/${res.body.id}`);
    expect(got).toEqual({ status: 200, body: { id: res.body.id, subject: 'Family A', openedAt: res.body.openedAt, closedAt: null } });
  });

  it('closes a case once: 200 and case.closed, then 409 case_already_closed with nothing more staged', async () => {
    const { body: opened } = await call(h.app, 'POST', '/v1/cases', { subject: 'to close' });
    const closed = await call(h.app, 'POST', `/v1/cases/${opened.id}/close`);
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ id: opened.id, closedAt: expect.any(String) });
    expect(Date.parse(closed.body.closedAt)).toBeGreaterThanOrEqual(Date.parse(opened.openedAt));
    const again = await call(h.app, 'POST', `/v1/cases/${opened.id}/close`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'case_already_closed', caseId: opened.id, closedAt: closed.body.closedAt });
    expect((await events()).map((e) => e.event_type)).toEqual(['case.opened', 'case.closed']);
    expect((await events())[1]).toEqual({ event_type: 'case.closed', aggregate_id: opened.id, payload: { caseId: opened.id, closedAt: closed.body.closedAt } });
  });

  it('two concurrent closes of one case: one wins, the other is refused, one case.closed', async () => {
    const { body: opened } = await call(h.app, 'POST', '/v1/cases', { subject: 'raced' });
    const results = await Promise.all([call(h.app, 'POST', `/v1/cases/${opened.id}/close`), call(h.app, 'POST', `/v1/cases/${opened.id}/close`)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await events()).filter((e) => e.event_type === 'case.closed')).toHaveLength(1);
  });

  it('an unknown id is 404 case_not_found (get and close), naming the id; nothing is written', async () => {
    for (const [method, url] of [['GET', `/v1/cases/${MISSING}`], ['POST', `/v1/cases/${MISSING}/close`]] as const) {
      const res = await call(h.app, method, url);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'case_not_found', caseId: MISSING });
    }
    // Any UUID shape the uuid type takes is an id (not only version 4): unknown, not malformed.
    const odd = await call(h.app, 'GET', '/v1/cases/FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF');
    expect(odd.status).toBe(404);
    expect(odd.body.error.code).toBe('case_not_found');
    expect(await counts()).toEqual({ cases: 0, events: 0 });
  });

  it('a malformed id is 400 invalid_request naming the value', async () => {
    for (const [method, url] of [['GET', '/v1/cases/not-a-uuid'], ['POST', '/v1/cases/not-a-uuid/close']] as const) {
      const res = await call(h.app, method, url);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'params.id', value: 'not-a-uuid' });
    }
  });

  it('refuses malformed bodies with 400 naming the field and value, writing nothing', async () => {
    const long = 'x'.repeat(201);
    const cases: Array<[unknown, string, unknown]> = [
      [{}, 'body.subject', undefined],
      [{ subject: '' }, 'body.subject', ''],
      [{ subject: '   ' }, 'body.subject', '   '],
      [{ subject: 42 }, 'body.subject', 42],
      [{ subject: long }, 'body.subject', expect.stringContaining('(201 characters)')],
      [{ subject: 'ok', extra: true }, 'body', '[object]'],
    ];
    for (const [payload, field, value] of cases) {
      const res = await call(h.app, 'POST', '/v1/cases', payload);
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body.error, JSON.stringify(payload)).toMatchObject({ code: 'invalid_request', field });
      expect(res.body.error.value, JSON.stringify(payload)).toEqual(value);
    }
    const raw = await h.app.inject({ method: 'POST', url: '/v1/cases', headers: { 'content-type': 'application/json' }, payload: '{"subject":' });
    expect(raw.statusCode).toBe(400);
    const none = await h.app.inject({ method: 'POST', url: '/v1/cases' });
    expect(none.statusCode).toBe(400);
    expect(none.json().error).toMatchObject({ code: 'invalid_request', field: 'body' });
    expect(await counts()).toEqual({ cases: 0, events: 0 });
  });

  it('a rolled-back write stages nothing: the event lives and dies with the row', async () => {
    await expect(
      h.sql.begin(async (tx) => {
        await openCase(tx, 'rolled back');
        throw new Error('later step failed');
      }),
    ).rejects.toThrow('later step failed');
    expect(await counts()).toEqual({ cases: 0, events: 0 });

    const { body: opened } = await call(h.app, 'POST', '/v1/cases', { subject: 'stays open' });
    await expect(
      h.sql.begin(async (tx) => {
        await closeCase(tx, opened.id);
        throw new Error('later step failed');
      }),
    ).rejects.toThrow('later step failed');
    expect((await call(h.app, 'GET', `/v1/cases/${opened.id}`)).body.closedAt).toBeNull();
    expect((await events()).map((e) => e.event_type)).toEqual(['case.opened']);
  });

  it('lists cases by status, oldest first, bounded; refuses a bad status or limit', async () => {
    const ids: string[] = [];
    for (const subject of ['one', 'two', 'three']) ids.push((await call(h.app, 'POST', '/v1/cases', { subject })).body.id);
    await call(h.app, 'POST', `/v1/cases/${ids[1]}/close`);
    expect((await call(h.app, 'GET', '/v1/cases?status=open')).body.cases.map((c: { id: string }) => c.id)).toEqual([ids[0], ids[2]]);
    expect((await call(h.app, 'GET', '/v1/cases?status=closed')).body.cases.map((c: { id: string }) => c.id)).toEqual([ids[1]]);
    expect((await call(h.app, 'GET', '/v1/cases?limit=2')).body.cases).toHaveLength(2);
    expect((await call(h.app, 'GET', '/v1/cases?status=open&order=newest')).body.cases.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[0]]);
    const bad = await call(h.app, 'GET', '/v1/cases?status=pending');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'query.status', value: 'pending' });
    expect((await call(h.app, 'GET', '/v1/cases?limit=1000')).body.error).toMatchObject({ field: 'query.limit' });
  });

  it('the outbox worker publishes the staged events to the transport as case.* envelopes', async () => {
    const seen: Delivery[] = [];
    const sub = await h.transport.subscribe({ consumer: 'cases-test.listener', patterns: ['case.*'], maxRetries: 0 }, async (d) => void seen.push(d));
    try {
      const { body: opened } = await call(h.app, 'POST', '/v1/cases', { subject: 'published' });
      await call(h.app, 'POST', `/v1/cases/${opened.id}/close`);
      expect((await h.service.outbox.drain()).published).toBe(2);
      await eventually(() => expect(seen).toHaveLength(2));
      const envelopes = seen.map((d) => decodeEnvelope(d.body));
      expect(envelopes.map((e) => [e.eventType, e.aggregateType, e.aggregateId, e.source])).toEqual([
        ['case.opened', 'case', opened.id, 'cases'],
        ['case.closed', 'case', opened.id, 'cases'],
      ]);
    } finally {
      await sub.close();
    }
  });

  it('exposes the admin replay and redrive routes behind the admin token', async () => {
    await expectEventAdminRoutes(h.app);
  });
});
