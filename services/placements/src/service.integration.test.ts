// The placements HTTP API against a real database: a placement needs an open case this service
// heard of; every write stages its event in the same transaction; every refusal writes nothing.
import { randomUUID } from 'node:crypto';
import { expectEventAdminRoutes } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, placementsHarness, type PlacementsHarness } from '../test/harness.ts';
import { startPlacement } from './placement-store.ts';

let h: PlacementsHarness;
beforeAll(async () => {
  h = await placementsHarness();
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate placements, case_refs, event_outbox, event_inbox`;
});

const counts = async () => {
  const [row] = await h.db.sql<{ placements: number; events: number }[]>`select (select count(*) from placements)::int as placements, (select count(*) from event_outbox)::int as events`;
  return row!;
};
const events = () => h.db.sql<{ event_type: string; aggregate_id: string; payload: Record<string, unknown> }[]>`select event_type, aggregate_id, payload from event_outbox order by id`;
const openCase = async () => {
  const caseId = randomUUID();
  await h.deliver('case.opened', caseId);
  return caseId;
};

describe('placements API', () => {
  it('starts a placement for an open case: 201 with the placement, and placement.started staged', async () => {
    const caseId = await openCase();
    const res = await call(h.app, 'POST', '/v1/placements', { caseId, provider: ' Harbor Group Home ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ caseId, provider: 'Harbor Group Home', endedAt: null, endReason: null });
    expect(await events()).toEqual([
      { event_type: 'placement.started', aggregate_id: res.body.id, payload: { placementId: res.body.id, caseId, provider: 'Harbor Group Home', startedAt: res.body.startedAt } },
    ]);
    expect(await call(h.app, 'GET', `/v1/placements/${res.body.id}`)).toEqual({ status: 200, body: res.body });
  });

  it('refuses a case unknown here (409 case_unknown) and a closed case (409 case_closed), writing nothing', async () => {
    const unknown = randomUUID();
    const refused = await call(h.app, 'POST', '/v1/placements', { caseId: unknown, provider: 'P' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'case_unknown', caseId: unknown });

    const closed = await openCase();
    await h.deliver('case.closed', closed);
    const refusedClosed = await call(h.app, 'POST', '/v1/placements', { caseId: closed, provider: 'P' });
    expect(refusedClosed.status).toBe(409);
    expect(refusedClosed.body.error).toMatchObject({ code: 'case_closed', caseId: closed });
    expect(await counts()).toEqual({ placements: 0, events: 0 });
  });

  it('ends a placement once: 200 and placement.ended (requested), then 409 placement_already_ended', async () => {
    const caseId = await openCase();
    const { body: started } = await call(h.app, 'POST', '/v1/placements', { caseId, provider: 'P' });
    const ended = await call(h.app, 'POST', `/v1/placements/${started.id}/end`);
    expect(ended.status).toBe(200);
    expect(ended.body).toMatchObject({ id: started.id, endReason: 'requested', endedAt: expect.any(String) });
    const again = await call(h.app, 'POST', `/v1/placements/${started.id}/end`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'placement_already_ended', placementId: started.id, endedAt: ended.body.endedAt, endReason: 'requested' });
    expect((await events()).map((e) => e.event_type)).toEqual(['placement.started', 'placement.ended']);
    expect((await events())[1]!.payload).toEqual({ placementId: started.id, caseId, endedAt: ended.body.endedAt, reason: 'requested' });
  });

  it('unknown and malformed placement ids: 404 placement_not_found, 400 naming the value', async () => {
    const missing = randomUUID();
    for (const [method, url] of [['GET', `/v1/placements/${missing}`], ['POST', `/v1/placements/${missing}/end`]] as const) {
      const res = await call(h.app, method, url);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'placement_not_found', placementId: missing });
    }
    const bad = await call(h.app, 'POST', '/v1/placements/12/end');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'params.id', value: '12' });
    expect(await counts()).toEqual({ placements: 0, events: 0 });
  });

  it('refuses malformed bodies with 400 naming the field and value, writing nothing', async () => {
    const caseId = await openCase();
    const cases: Array<[unknown, string, unknown]> = [
      [{ provider: 'P' }, 'body.caseId', undefined],
      [{ caseId: 'case-1', provider: 'P' }, 'body.caseId', 'case-1'],
      [{ caseId }, 'body.provider', undefined],
      [{ caseId, provider: ' ' }, 'body.provider', ' '],
      [{ caseId, provider: 'x'.repeat(201) }, 'body.provider', expect.stringContaining('(201 characters)')],
      [{ caseId, provider: 'P', startedAt: '2020-01-01' }, 'body', '[object]'],
      [[caseId], 'body', '[array]'],
    ];
    for (const [payload, field, value] of cases) {
      const res = await call(h.app, 'POST', '/v1/placements', payload);
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body.error, JSON.stringify(payload)).toMatchObject({ code: 'invalid_request', field });
      expect(res.body.error.value, JSON.stringify(payload)).toEqual(value);
    }
    expect(await counts()).toEqual({ placements: 0, events: 0 });
  });

  it('a rolled-back start stages nothing', async () => {
    const caseId = await openCase();
    await expect(
      h.sql.begin(async (tx) => {
        await startPlacement(tx, caseId, 'P');
        throw new Error('later step failed');
      }),
    ).rejects.toThrow('later step failed');
    expect(await counts()).toEqual({ placements: 0, events: 0 });
  });

  it('lists placements by case and status; refuses a bad filter', async () => {
    const [a, b] = [await openCase(), await openCase()];
    const p1 = (await call(h.app, 'POST', '/v1/placements', { caseId: a, provider: 'P1' })).body;
    const p2 = (await call(h.app, 'POST', '/v1/placements', { caseId: a, provider: 'P2' })).body;
    const p3 = (await call(h.app, 'POST', '/v1/placements', { caseId: b, provider: 'P3' })).body;
    await call(h.app, 'POST', `/v1/placements/${p1.id}/end`);
    const ids = async (query: string) => (await call(h.app, 'GET', `/v1/placements?${query}`)).body.placements.map((p: { id: string }) => p.id);
    expect(await ids(`caseId=${a}`)).toEqual([p1.id, p2.id]);
    expect(await ids('status=active')).toEqual([p2.id, p3.id]);
    expect(await ids(`caseId=${a}&status=ended`)).toEqual([p1.id]);
    const bad = await call(h.app, 'GET', '/v1/placements?caseId=abc');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'query.caseId', value: 'abc' });
  });

  it('exposes the admin replay route behind the admin token', async () => {
    await expectEventAdminRoutes(h.app, { redrive: false });
  });
});
