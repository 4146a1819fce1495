// Every route of the safety API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { randomUUID } from 'node:crypto';
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { SEVERITIES } from './report-store.ts';
import { ADMIN_TOKEN, call, safetyHarness } from '../test/harness.ts';

const h = await safetyHarness();
const known = randomUUID();
await h.deliver('case.opened', known);
const filed = (await call(h.app, 'POST', '/v1/safety-reports', { caseId: known, severity: 'low', summary: 's' })).body.id as string;
const caseId = fc.oneof(fc.constant(known), fc.uuid());

describeHttpFuzz({
  service: 'safety',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/safety-reports': { body: shapedObject({ caseId, severity: fc.constantFrom(...SEVERITIES), summary: fc.string({ maxLength: 2010 }) }) },
    'GET /v1/safety-reports/:id': { params: { id: fc.oneof(fc.constant(filed), fc.uuid()) } },
    'GET /v1/safety-reports': { query: { caseId, limit: fc.integer({ min: 0, max: 101 }).map(String) } },
  },
});
