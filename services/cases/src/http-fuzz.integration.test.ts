// Every route of the cases API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { ADMIN_TOKEN, call, casesHarness } from '../test/harness.ts';

const h = await casesHarness();
const opened = await Promise.all(['a', 'b', 'c'].map(async (subject) => (await call(h.app, 'POST', '/v1/cases', { subject })).body.id as string));
await call(h.app, 'POST', `/v1/cases/${opened[2]}/close`);
const caseId = fc.oneof(fc.constantFrom(...opened), fc.uuid());

describeHttpFuzz({
  service: 'cases',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/cases': { body: shapedObject({ subject: fc.string({ maxLength: 210 }) }) },
    'POST /v1/cases/:id/close': { params: { id: caseId } },
    'GET /v1/cases/:id': { params: { id: caseId } },
    'GET /v1/cases': { query: { status: fc.constantFrom('open', 'closed'), order: fc.constantFrom('oldest', 'newest'), limit: fc.integer({ min: 0, max: 101 }).map(String) } },
  },
});
