// Every route of the security API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { describeHttpFuzz, fc } from '@craig/service-testkit';
import { ADMIN_TOKEN, serviceHarness } from '../test/harness.ts';

const h = await serviceHarness({ prefix: 'security_fuzz' });
await h.db.sql`
  insert into audit_log (event_id, event_type, aggregate_type, aggregate_id, source, payload, occurred_at, received_at)
  select gen_random_uuid(), 'case.opened', 'case', 'a-' || g, 'cases', jsonb_build_object('n', g), now() - make_interval(hours => g), now() - make_interval(hours => g)
  from generate_series(1, 5) g`;
await h.db.sql`
  insert into dead_letter_audit (consumer, message_id, routing_key, error, attempts, body, dead_lettered_at, received_at)
  values ('cases.flaky', 'm-1', 'placement.started', 'boom', 2, 'raw', now(), now())`;
const limit = fc.integer({ min: 0, max: 501 }).map(String);

describeHttpFuzz({
  service: 'security',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'GET /v1/audit': { query: { eventType: fc.constantFrom('case.opened', 'case.*', 'a'.repeat(256)), since: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), limit } },
    'GET /v1/dead-letters': { query: { limit } },
    'POST /v1/admin/archive/run': { costly: true },
  },
});
