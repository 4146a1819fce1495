// Every route of the rules API under hostile input (`describeHttpFuzz`, @craig/service-testkit).
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { OUTCOMES } from './evaluation-store.ts';
import { ADMIN_TOKEN, call, serviceHarness } from '../test/harness.ts';

const h = await serviceHarness({ prefix: 'rules_fuzz' });
const rule = (name: string) => ({ name, when: { eventType: 'case.*', field: 'caseId', op: 'exists', value: true }, outcome: 'flag' });
const created = await call(h.app, 'POST', '/v1/rule-sets/default/snapshots', { token: ADMIN_TOKEN, body: { rules: [rule('r1')] } });
const snapshotId = String(created.body.snapshot.id);
const name = fc.oneof({ arbitrary: fc.constantFrom('default', 'strict'), weight: 3 }, { arbitrary: fc.constantFrom('a'.repeat(64), 'UPPER', '-x'), weight: 1 }, { arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,8}$/), weight: 1 });
const condition = shapedObject({
  eventType: fc.constantFrom('case.opened', 'case.*', '#', '*.*', 'a..b', 'x'.repeat(300)),
  field: fc.constantFrom('caseId', 'a.b.c', 'a.b.c.d.e.f.g.h.i', '0', ''),
  op: fc.constantFrom('eq', 'neq', 'gt', 'lt', 'in', 'exists', 'regex'),
  value: fc.oneof(fc.string({ maxLength: 260 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { maxLength: 102 })),
});
const validRule = fc.record({
  name: fc.stringMatching(/^[a-z]{1,6}$/),
  when: fc.oneof(
    fc.record({ eventType: fc.constantFrom('case.opened', 'case.*', '#'), field: fc.constantFrom('caseId', 'a.b'), op: fc.constantFrom<'eq' | 'neq'>('eq', 'neq'), value: fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null)) }),
    fc.record({ eventType: fc.constant('placement.*'), field: fc.constant('n'), op: fc.constantFrom<'gt' | 'lt'>('gt', 'lt'), value: fc.integer() }),
    fc.record({ eventType: fc.constant('#'), field: fc.constant('kind'), op: fc.constant('in' as const), value: fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 5 }) }),
    fc.record({ eventType: fc.constant('safety.reported'), field: fc.constant('severity'), op: fc.constant('exists' as const), value: fc.boolean() }),
  ),
  outcome: fc.constantFrom('flag', 'block'),
});
const ruleShape = shapedObject({ name: fc.stringMatching(/^[A-Za-z0-9_.-]{1,8}$/), when: condition, outcome: fc.constantFrom('flag', 'block', 'pass') });

describeHttpFuzz({
  service: 'rules',
  app: h.app,
  owner: h.db.sql,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/rule-sets/:name/snapshots': {
      params: { name },
      body: fc.oneof(
        { arbitrary: fc.record({ rules: fc.uniqueArray(validRule, { selector: (r) => r.name, maxLength: 4 }) }), weight: 2 },
        { arbitrary: shapedObject({ rules: fc.array(fc.oneof(validRule, ruleShape), { maxLength: 4 }), createdBy: fc.string({ maxLength: 101 }) }), weight: 3 },
      ),
    },
    'GET /v1/rule-sets/:name/snapshots/latest': { params: { name } },
    'POST /v1/rule-sets/:name/previews': { params: { name }, body: shapedObject({ snapshotId: fc.oneof(fc.constant(snapshotId), fc.constant(Number(snapshotId)), fc.bigInt({ min: 1n, max: 10n ** 19n }).map(String)), sample: fc.integer({ min: 0, max: 10_001 }) }) },
    'GET /v1/evaluations': { query: { eventType: fc.constantFrom('case.opened', 'a'.repeat(256)), outcome: fc.constantFrom(...OUTCOMES), since: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), limit: fc.integer({ min: 0, max: 501 }).map(String) } },
    'POST /v1/admin/archive/run': { costly: true },
  },
});
