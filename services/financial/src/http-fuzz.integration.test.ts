// Every route of the financial API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { QUEUE_STATUSES } from './reconcile-store.ts';
import { ADMIN_TOKEN, seedQueue, serviceHarness } from '../test/harness.ts';

const h = await serviceHarness({ prefix: 'financial_fuzz' });
await seedQueue(h.db.sql, { status: 'pending', count: 3, ageDays: 1, placement: 'p-1' });
await seedQueue(h.db.sql, { status: 'matched', count: 2, ageDays: 1 });
await seedQueue(h.db.sql, { status: 'settled', count: 2, ageDays: 200 });
const validLine = fc.record({ placementId: fc.constantFrom('p-1', 'p-2'), amount: fc.oneof(fc.constantFrom('10.00', '0', '999999999999.99'), fc.integer({ min: 0, max: 10_000 })) });
const line = shapedObject({ placementId: fc.constantFrom('p-1', 'p-2', ' p ', 'x'.repeat(201)), amount: fc.oneof(fc.constantFrom('10.00', '0', '999999999999.99', '1e3', '-1', '12.345'), fc.double()) });

describeHttpFuzz({
  service: 'financial',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/subsidy-imports': {
      body: fc.oneof(
        { arbitrary: fc.record({ source: fc.uuid(), period: fc.constantFrom('2026-01', '2026-02-01'), lines: fc.array(validLine, { minLength: 1, maxLength: 4 }) }), weight: 2 },
        {
          arbitrary: shapedObject({
            source: fc.oneof(fc.uuid(), fc.string({ maxLength: 210 })),
            period: fc.constantFrom('2026-01', '2026-01-01', '2026-13', '0000-01', '2026-1'),
            lines: fc.array(fc.oneof(validLine, line), { maxLength: 4 }),
          }),
          weight: 3,
        },
      ),
    },
    'GET /v1/reconcile-queue': { query: { status: fc.constantFrom(...QUEUE_STATUSES), limit: fc.integer({ min: 0, max: 501 }).map(String) } },
    'POST /v1/admin/reconcile/settle': { body: shapedObject({ limit: fc.integer({ min: 0, max: 1001 }) }) },
    'POST /v1/admin/reconcile/sweep': { costly: true },
  },
});
