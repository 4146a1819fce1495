// Every route of the placements API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { randomUUID } from 'node:crypto';
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { ADMIN_TOKEN, call, placementsHarness } from '../test/harness.ts';

const h = await placementsHarness();
const [open, closed] = [randomUUID(), randomUUID()];
await h.deliver('case.opened', open);
await h.deliver('case.opened', closed);
await h.deliver('case.closed', closed);
const started = (await call(h.app, 'POST', '/v1/placements', { caseId: open, provider: 'p' })).body.id as string;
const caseId = fc.oneof(fc.constantFrom(open, closed), fc.uuid());
const placementId = fc.oneof(fc.constant(started), fc.uuid());

describeHttpFuzz({
  service: 'placements',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/placements': { body: shapedObject({ caseId, provider: fc.string({ maxLength: 210 }) }) },
    'POST /v1/placements/:id/end': { params: { id: placementId } },
    'GET /v1/placements/:id': { params: { id: placementId } },
    'GET /v1/placements': { query: { caseId, status: fc.constantFrom('active', 'ended'), limit: fc.integer({ min: 0, max: 101 }).map(String) } },
  },
});
