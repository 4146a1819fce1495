// The case.* consumer: case refs kept idempotently and in any order.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, safetyHarness, type SafetyHarness } from '../test/harness.ts';
import { CASES_CONSUMER } from './consumer.ts';

let h: SafetyHarness;
beforeAll(async () => {
  h = await safetyHarness();
});
afterAll(() => h.drop());

const ref = async (caseId: string) => (await h.db.sql`select status from case_refs where case_id = ${caseId}`)[0]?.status as string | undefined;

describe('safety case.* consumer', () => {
  it('handles a duplicate delivery once and makes the case known to the API', async () => {
    const caseId = randomUUID();
    const eventId = randomUUID();
    expect((await call(h.app, 'POST', '/v1/safety-reports', { caseId, severity: 'low', summary: 's' })).body.error.code).toBe('case_unknown');
    await h.deliver('case.opened', caseId, eventId);
    await h.deliver('case.opened', caseId, eventId);
    expect(await ref(caseId)).toBe('open');
    const [inbox] = await h.db.sql`select count(*)::int as n, min(consumer) as consumer from event_inbox where event_id = ${eventId}`;
    expect(inbox).toEqual({ n: 1, consumer: CASES_CONSUMER });
    expect((await call(h.app, 'POST', '/v1/safety-reports', { caseId, severity: 'low', summary: 's' })).status).toBe(201);
  });

  it('a case.closed before its case.opened leaves the case closed; a repeated close is harmless', async () => {
    const caseId = randomUUID();
    await h.deliver('case.closed', caseId);
    await h.deliver('case.opened', caseId);
    expect(await ref(caseId)).toBe('closed');
    await h.deliver('case.closed', caseId);
    expect(await ref(caseId)).toBe('closed');
  });
});
