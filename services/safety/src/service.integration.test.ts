// The safety HTTP API against a real database: a report needs a case this service heard of;
// filing stages safety.reported in the same transaction; every refusal writes nothing.
import { randomUUID } from 'node:crypto';
import { expectEventAdminRoutes } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, safetyHarness, type SafetyHarness } from '../test/harness.ts';
import { fileReport } from './report-store.ts';

let h: SafetyHarness;
beforeAll(async () => {
  h = await safetyHarness();
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate safety_reports, case_refs, event_outbox, event_inbox`;
});

const counts = async () => {
  const [row] = await h.db.sql<{ reports: number; events: number }[]>`select (select count(*) from safety_reports)::int as reports, (select count(*) from event_outbox)::int as events`;
  return row!;
};
const knownCase = async (closed = false) => {
  const caseId = randomUUID();
  await h.deliver('case.opened', caseId);
  if (closed) await h.deliver('case.closed', caseId);
  return caseId;
};

describe('safety API', () => {
  it('files a report: 201 with the report, safety.reported staged without the summary', async () => {
    const caseId = await knownCase();
    const res = await call(h.app, 'POST', '/v1/safety-reports', { caseId, severity: 'high', summary: ' injury reported by school ' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ caseId, severity: 'high', summary: 'injury reported by school', reportedAt: expect.any(String) });
    const events = await h.db.sql`select event_type, aggregate_type, aggregate_id, payload from event_outbox`;
    expect(events).toEqual([
      { event_type: 'safety.reported', aggregate_type: 'safety_report', aggregate_id: res.body.id, payload: { reportId: res.body.id, caseId, severity: 'high', reportedAt: res.body.reportedAt } },
    ]);
    expect(await call(h.app, 'GET', `/v1/safety-reports/${res.body.id}`)).toEqual({ status: 200, body: res.body });
  });

  it('files a report on a closed case too (a concern about a closed case is still a concern)', async () => {
    const caseId = await knownCase(true);
    expect((await call(h.app, 'POST', '/v1/safety-reports', { caseId, severity: 'low', summary: 'follow-up' })).status).toBe(201);
  });

  it('refuses a case unknown here with 409 case_unknown, writing nothing', async () => {
    const caseId = randomUUID();
    const res = await call(h.app, 'POST', '/v1/safety-reports', { caseId, severity: 'medium', summary: 'x' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'case_unknown', caseId });
    expect(await counts()).toEqual({ reports: 0, events: 0 });
  });

  it('refuses malformed bodies with 400 naming the field and value, writing nothing', async () => {
    const caseId = await knownCase();
    const cases: Array<[unknown, string, unknown]> = [
      [{ severity: 'low', summary: 's' }, 'body.caseId', undefined],
      [{ caseId: 'c-1', severity: 'low', summary: 's' }, 'body.caseId', 'c-1'],
      [{ caseId, severity: 'critical', summary: 's' }, 'body.severity', 'critical'],
      [{ caseId, severity: 'low' }, 'body.summary', undefined],
      [{ caseId, severity: 'low', summary: '' }, 'body.summary', ''],
      [{ caseId, severity: 'low', summary: 'x'.repeat(2001) }, 'body.summary', expect.stringContaining('(2001 characters)')],
      [{ caseId, severity: 'low', summary: 's', reporter: 'me' }, 'body', '[object]'],
    ];
    for (const [payload, field, value] of cases) {
      const res = await call(h.app, 'POST', '/v1/safety-reports', payload);
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect(res.body.error, JSON.stringify(payload)).toMatchObject({ code: 'invalid_request', field });
      expect(res.body.error.value, JSON.stringify(payload)).toEqual(value);
    }
    expect(await counts()).toEqual({ reports: 0, events: 0 });
  });

  it('a rolled-back filing stages nothing', async () => {
    const caseId = await knownCase();
    await expect(
      h.sql.begin(async (tx) => {
        await fileReport(tx, { caseId, severity: 'low', summary: 's' });
        throw new Error('later step failed');
      }),
    ).rejects.toThrow('later step failed');
    expect(await counts()).toEqual({ reports: 0, events: 0 });
  });

  it('reads: 404 safety_report_not_found, 400 on a malformed id; lists by case oldest first', async () => {
    const missing = randomUUID();
    const notFound = await call(h.app, 'GET', `/v1/safety-reports/${missing}`);
    expect(notFound.status).toBe(404);
    expect(notFound.body.error).toMatchObject({ code: 'safety_report_not_found', reportId: missing });
    const bad = await call(h.app, 'GET', '/v1/safety-reports/abc');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'params.id', value: 'abc' });

    const [a, b] = [await knownCase(), await knownCase()];
    const r1 = (await call(h.app, 'POST', '/v1/safety-reports', { caseId: a, severity: 'low', summary: 'one' })).body;
    await call(h.app, 'POST', '/v1/safety-reports', { caseId: b, severity: 'low', summary: 'two' });
    const r3 = (await call(h.app, 'POST', '/v1/safety-reports', { caseId: a, severity: 'high', summary: 'three' })).body;
    const listed = await call(h.app, 'GET', `/v1/safety-reports?caseId=${a}`);
    expect(listed.body.reports.map((r: { id: string }) => r.id)).toEqual([r1.id, r3.id]);
    expect((await call(h.app, 'GET', '/v1/safety-reports?limit=2')).body.reports).toHaveLength(2);
    const badQuery = await call(h.app, 'GET', '/v1/safety-reports?caseId=nope');
    expect(badQuery.body.error).toMatchObject({ code: 'invalid_request', field: 'query.caseId', value: 'nope' });
  });

  it('exposes the admin replay route behind the admin token', async () => {
    await expectEventAdminRoutes(h.app, { redrive: false });
  });
});
