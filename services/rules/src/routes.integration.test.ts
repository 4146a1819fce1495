// The rule-set and evaluation APIs: admin writes behind the token, bounded and validated reads,
// every refusal naming the offending value.
import { expectEventAdminRoutes, expectRefusedQuery, expectServiceEndpoints } from '@craig/service-testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, call, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'rules_api' });
});
afterAll(() => h.drop());

const highSeverity = { name: 'high', when: { eventType: 'safety.reported', field: 'severity', op: 'in', value: ['high', 'critical'] }, outcome: 'flag' };
const mediumBlocks = { name: 'medium', when: { eventType: 'safety.*', field: 'severity', op: 'eq', value: 'medium' }, outcome: 'block' };

describe('POST /v1/rule-sets/:name/snapshots', () => {
  it('needs the admin token', async () => {
    expect((await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { body: { rules: [] } })).status).toBe(401);
    const wrong = await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { token: 'wrong-token-wrong-token', body: { rules: [] } });
    expect(wrong).toMatchObject({ status: 401, body: { error: { code: 'unauthorized' } } });
    expect((await h.db.sql`select count(*)::int as n from rule_set_snapshots where rule_set = 'strict'`)[0]!.n).toBe(0);
  });

  it('stores each post as the next version; the latest is served back', async () => {
    const first = await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity], createdBy: 'alice' } });
    expect(first.status).toBe(201);
    expect(first.body.snapshot).toMatchObject({ ruleSet: 'strict', version: 1, rules: [highSeverity], createdBy: 'alice', createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/) });
    const second = await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity, mediumBlocks] } });
    expect(second.body.snapshot).toMatchObject({ ruleSet: 'strict', version: 2, createdBy: 'admin' });
    const latest = await call(h.app, 'GET', '/v1/rule-sets/strict/snapshots/latest');
    expect(latest).toMatchObject({ status: 200, body: { snapshot: { id: second.body.snapshot.id, version: 2, rules: [highSeverity, mediumBlocks] } } });
    // The active set ships with the schema.
    expect((await call(h.app, 'GET', '/v1/rule-sets/default/snapshots/latest')).body.snapshot).toMatchObject({ version: 1, createdBy: 'migration', rules: expect.arrayContaining([expect.objectContaining({ name: 'safety-high-severity' })]) });
  });

  it('gives concurrent posts distinct consecutive versions', async () => {
    const posts = await Promise.all(Array.from({ length: 8 }, () => call(h.app, 'POST', '/v1/rule-sets/burst/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity] } })));
    expect(posts.map((p) => p.status)).toEqual(Array.from({ length: 8 }, () => 201));
    expect(posts.map((p) => p.body.snapshot.version as number).sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('refuses an invalid rule with a typed 400 naming the rule index, the path and the value, and stores nothing', async () => {
    const res = await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity, { ...mediumBlocks, when: { ...mediumBlocks.when, op: 'matches' } }] } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field: 'rules[1].when.op', ruleIndex: 1, value: 'matches' });
    expect(res.body.error.message).toContain('rules[1].when.op="matches"');
    expect((await h.db.sql`select count(*)::int as n from rule_set_snapshots where rule_set = 'strict'`)[0]!.n).toBe(2);
  });

  it.each([
    ['a body without rules', { createdBy: 'x' }, 'rules', undefined],
    ['an unknown body field', { rules: [], active: true }, 'active', true],
    ['a bad createdBy', { rules: [], createdBy: '' }, 'createdBy', ''],
    ['a body that is not an object', ['x'], 'body', ['x']],
  ])('refuses %s', async (_label, body, field, value) => {
    const res = await call(h.app, 'POST', '/v1/rule-sets/strict/snapshots', { token: ADMIN_TOKEN, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', field });
    expect(res.body.error.value).toEqual(value);
  });

  it('refuses a malformed rule-set name; an unknown set is a 404', async () => {
    const bad = await call(h.app, 'POST', '/v1/rule-sets/Bad%20Name/snapshots', { token: ADMIN_TOKEN, body: { rules: [] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', field: 'name', value: 'Bad Name' });
    const missing = await call(h.app, 'GET', '/v1/rule-sets/nowhere/snapshots/latest');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'not_found', id: 'nowhere' });
  });
});

describe('POST /v1/rule-sets/:name/previews', () => {
  beforeEach(async () => {
    await h.db.sql`delete from rule_evaluations`;
  });

  async function seedEvaluations(): Promise<void> {
    // Inputs as the consumer would have stored them (outcomes of default v1).
    await h.db.sql`
      insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, matched_rules, input)
      select gen_random_uuid(), 'safety.reported', (select id from rule_set_snapshots where rule_set = 'default' and version = 1),
             case when g % 4 in (2, 3) then 'flag' else 'pass' end, '{}', jsonb_build_object('severity', (array['low', 'medium', 'high', 'critical'])[1 + g % 4])
      from generate_series(1, 40) g`;
  }

  it('replays recent inputs against the candidate and the version it follows, and stores the counts of changed outcomes', async () => {
    await seedEvaluations();
    const v1 = (await call(h.app, 'POST', '/v1/rule-sets/preview/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity] } })).body.snapshot;
    const v2 = (await call(h.app, 'POST', '/v1/rule-sets/preview/snapshots', { token: ADMIN_TOKEN, body: { rules: [highSeverity, mediumBlocks] } })).body.snapshot;

    const res = await call(h.app, 'POST', '/v1/rule-sets/preview/previews', { token: ADMIN_TOKEN, body: { snapshotId: Number(v2.id) } });
    expect(res.status).toBe(201);
    expect(res.body.preview).toMatchObject({
      snapshotId: v2.id,
      comparedToSnapshotId: v1.id,
      summary: {
        ruleSet: 'preview',
        snapshotVersion: 2,
        comparedToVersion: 1,
        sample: 1000,
        evaluated: 40,
        changed: 10,
        transitions: { 'pass->block': 10 },
        baseline: { pass: 20, flag: 20, block: 0 },
        candidate: { pass: 10, flag: 20, block: 10 },
      },
    });
    expect(res.body.preview.summary.examples).toHaveLength(10);
    expect(res.body.preview.summary.examples[0]).toMatchObject({ eventType: 'safety.reported', from: 'pass', to: 'block' });
    const [stored] = await h.db.sql`select snapshot_id::text, compared_to_snapshot_id::text, summary from rule_set_promotion_previews where id = ${res.body.preview.id}`;
    expect(stored).toEqual({ snapshot_id: v2.id, compared_to_snapshot_id: v1.id, summary: res.body.preview.summary });

    // A first version is compared against nothing (every outcome pass); the sample bounds the replay.
    const first = await call(h.app, 'POST', '/v1/rule-sets/preview/previews', { token: ADMIN_TOKEN, body: { snapshotId: v1.id, sample: 8 } });
    expect(first.body.preview).toMatchObject({ comparedToSnapshotId: null, summary: { comparedToVersion: null, sample: 8, evaluated: 8, baseline: { pass: 8, flag: 0, block: 0 } } });
    expect(first.body.preview.summary.candidate.flag).toBe(first.body.preview.summary.changed);
  });

  it('needs the token and a snapshot of that rule set; validates the body', async () => {
    const v1 = (await call(h.app, 'POST', '/v1/rule-sets/other/snapshots', { token: ADMIN_TOKEN, body: { rules: [] } })).body.snapshot;
    expect((await call(h.app, 'POST', '/v1/rule-sets/other/previews', { body: { snapshotId: v1.id } })).status).toBe(401);
    const foreign = await call(h.app, 'POST', '/v1/rule-sets/strict/previews', { token: ADMIN_TOKEN, body: { snapshotId: v1.id } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'not_found', id: v1.id });
    for (const [body, field, value] of [
      [{ snapshotId: 'abc' }, 'snapshotId', 'abc'],
      [{ snapshotId: 0 }, 'snapshotId', 0],
      [{}, 'snapshotId', undefined],
      [{ snapshotId: v1.id, sample: 10_001 }, 'sample', 10_001],
      [{ snapshotId: v1.id, sample: 1.5 }, 'sample', 1.5],
    ] as const) {
      const res = await call(h.app, 'POST', '/v1/rule-sets/other/previews', { token: ADMIN_TOKEN, body });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', field });
      expect(res.body.error.value).toEqual(value);
    }
    expect((await h.db.sql`select count(*)::int as n from rule_set_promotion_previews p join rule_set_snapshots s on s.id = p.snapshot_id where s.rule_set = 'other'`)[0]!.n).toBe(0);
  });

  it('the snapshot and preview tables refuse UPDATE and DELETE', async () => {
    await expect(h.db.sql`update rule_set_snapshots set created_by = 'x' where rule_set = 'default'`).rejects.toThrow('rule_set_snapshots is insert-only: UPDATE refused');
    await expect(h.db.sql`delete from rule_set_snapshots where rule_set = 'strict'`).rejects.toThrow('rule_set_snapshots is insert-only: DELETE refused');
    await expect(h.db.sql`delete from rule_set_promotion_previews`).rejects.toThrow('rule_set_promotion_previews is insert-only: DELETE refused');
    await seedEvaluations();
    await expect(h.db.sql`update rule_evaluations set outcome = 'pass'`).rejects.toThrow('rule_evaluations is insert-only: UPDATE refused');
  });
});

describe('GET /v1/evaluations', () => {
  beforeAll(async () => {
    await h.db.sql`delete from rule_evaluations`;
    await h.db.sql`
      insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, matched_rules, input, evaluated_at)
      select gen_random_uuid(), case when g % 2 = 0 then 'case.opened' else 'safety.reported' end,
             (select id from rule_set_snapshots where rule_set = 'default' and version = 1),
             case when g % 3 = 0 then 'flag' else 'pass' end, case when g % 3 = 0 then array['r'] else '{}' end,
             jsonb_build_object('n', g), now() - make_interval(hours => g)
      from generate_series(1, 10) g`;
  });

  it('lists newest first, filtered by event type, outcome and since, bounded by limit', async () => {
    const all = await call(h.app, 'GET', '/v1/evaluations');
    expect(all.status).toBe(200);
    expect(all.body.evaluations.map((e: { input: { n: number } }) => e.input.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(all.body.evaluations[2]).toMatchObject({ eventType: 'safety.reported', outcome: 'flag', matchedRules: ['r'], ruleSet: 'default', snapshotVersion: 1, evaluatedAt: expect.stringMatching(/Z$/) });

    const since = new Date(Date.now() - 6.5 * 3_600_000).toISOString();
    const window = await call(h.app, 'GET', `/v1/evaluations?eventType=case.opened&since=${encodeURIComponent(since)}`);
    expect(window.body.evaluations.map((e: { input: { n: number } }) => e.input.n)).toEqual([2, 4, 6]);
    const flagged = await call(h.app, 'GET', '/v1/evaluations?outcome=flag&limit=2');
    expect(flagged.body.evaluations.map((e: { input: { n: number } }) => e.input.n)).toEqual([3, 6]);
  });

  it.each([
    ['limit=0', 'limit', '0'],
    ['limit=501', 'limit', '501'],
    ['limit=ten', 'limit', 'ten'],
    ['outcome=blocked', 'outcome', 'blocked'],
    ['since=yesterday', 'since', 'yesterday'],
    ['eventType=case%20opened', 'eventType', 'case opened'],
    ['eventType=case.*', 'eventType', 'case.*'],
    ['actor=me', 'actor', 'me'],
  ])('refuses %s with a typed 400 naming the value', (query, parameter, value) => expectRefusedQuery(h.app, `/v1/evaluations?${query}`, parameter, value));

  it('refuses a repeated parameter', () => expectRefusedQuery(h.app, '/v1/evaluations?outcome=flag&outcome=pass', 'outcome', ['flag', 'pass']));
});

describe('service endpoints', () => {
  it('serves health, readiness, metrics and the event admin routes behind the token', async () => {
    await expectServiceEndpoints(h.app, 'rules', 'archive_batches_total');
    expect(await expectEventAdminRoutes(h.app, { windowMs: 3_600_000 })).toMatchObject({ replayed: 0 });
  });
});
