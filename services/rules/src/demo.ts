import type { ServiceDemo } from '@craig/service';
import type { Sql } from 'postgres';
import { createPreview } from './preview.ts';
import { evaluate, parseRules, type Rule } from './rule-language.ts';
import { ACTIVE_RULE_SET } from './snapshot-store.ts';

const EVENT_TYPES = ['case.opened', 'case.closed', 'placement.started', 'placement.ended', 'safety.reported'] as const;
const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const;
/** Version 2 of `default` in the seeded history: version 1 (the migration's) plus medium-severity reports. */
const MEDIUM_SEVERITY = { name: 'safety-medium-severity', when: { eventType: 'safety.reported', field: 'severity', op: 'eq', value: 'medium' }, outcome: 'flag' } as const;
/** Version 2 took over this many days ago. */
const V2_AGE_DAYS = 150;

/** The payload a producer of this event type could have published (fields the default rules read). */
function demoPayload(eventType: string, g: number): Record<string, unknown> {
  const caseId = `case-${g % 997}`;
  if (eventType === 'case.opened') return g % 7 === 0 ? { caseId } : { caseId, caseworkerId: `worker-${g % 41}` };
  if (eventType === 'case.closed') return { caseId };
  if (eventType.startsWith('placement.')) return { placementId: `placement-${g}`, caseId, caseStatus: g % 11 === 0 ? 'closed' : 'open' };
  return { reportId: `report-${g}`, caseId, severity: SEVERITIES[g % SEVERITIES.length] };
}

/**
 * History as the service would have left it after running for 400 days: version 1 of `default`
 * dated back to the start (the migration inserts it at migration time; the seed, as owner,
 * dates it back with the insert-only trigger disabled for that one statement), version 2 taking
 * over 150 days ago, evaluations 100–400 days old (past the 90-day hot window, so the archive
 * has work at once) and a tenth as many fresh ones, each evaluated by the rules the consumer
 * would have used then, with its inbox record and its published `rule.evaluated`; published
 * archive announcements; and a promotion preview of version 2 over the seeded evaluations.
 */
async function seedAgedHistory(sql: Sql, options: { readonly rows: number }): Promise<void> {
  const aged = Math.max(1, options.rows);
  const fresh = Math.max(1, Math.floor(aged / 10));
  const v2Id = await sql.begin(async (tx) => {
    await tx`alter table rule_set_snapshots disable trigger rule_set_snapshots_insert_only`;
    const [v1] = await tx<{ id: string; rules: unknown }[]>`
      update rule_set_snapshots set created_at = now() - interval '410 days'
      where rule_set = ${ACTIVE_RULE_SET} and version = 1 returning id::text, rules`;
    await tx`alter table rule_set_snapshots enable trigger rule_set_snapshots_insert_only`;
    const v1Rules = parseRules(v1!.rules);
    const v2Rules: readonly Rule[] = parseRules([...v1Rules, MEDIUM_SEVERITY]);
    const [v2] = await tx<{ id: string }[]>`
      insert into rule_set_snapshots (rule_set, version, rules, created_by, created_at)
      values (${ACTIVE_RULE_SET}, 2, ${JSON.stringify(v2Rules)}::text::jsonb, 'demo-admin', now() - make_interval(days => ${V2_AGE_DAYS}))
      returning id::text`;

    // Ages in days: 100…400 for the aged rows, 0…30 for the fresh ones; each evaluated by the
    // snapshot active at that age.
    const rows = Array.from({ length: aged + fresh }, (_, i) => {
      const g = i + 1;
      const ageDays = g <= aged ? 100 + Math.floor(((g - 1) * 300) / Math.max(1, aged - 1)) : g % 31;
      const eventType = EVENT_TYPES[g % EVENT_TYPES.length]!;
      const payload = demoPayload(eventType, g);
      const older = ageDays > V2_AGE_DAYS;
      const result = evaluate(older ? v1Rules : v2Rules, { eventType, payload });
      return { g, age_days: ageDays, age_secs: g % 86400, event_type: eventType, payload, snapshot_id: older ? v1!.id : v2!.id, version: older ? 1 : 2, outcome: result.outcome, matched: result.matchedRules };
    });
    await tx`create temporary table demo_evaluations (g integer, event_id uuid, evaluation_id uuid, event_type text, payload jsonb, snapshot_id bigint, version integer, outcome text, matched text[], evaluated_at timestamptz) on commit drop`;
    await tx`
      insert into demo_evaluations (g, event_id, evaluation_id, event_type, payload, snapshot_id, version, outcome, matched, evaluated_at)
      select r.g, gen_random_uuid(), gen_random_uuid(), r.event_type, r.payload, r.snapshot_id, r.version, r.outcome,
             array(select jsonb_array_elements_text(r.matched)), now() - make_interval(days => r.age_days, secs => r.age_secs)
      from jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb)
        as r(g integer, age_days integer, age_secs integer, event_type text, payload jsonb, snapshot_id bigint, version integer, outcome text, matched jsonb)`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'rules.evaluate', event_id, event_type, evaluated_at from demo_evaluations`;
    await tx`
      insert into rule_evaluations (event_id, event_type, snapshot_id, outcome, matched_rules, input, evaluated_at)
      select event_id, event_type, snapshot_id, outcome, matched, payload, evaluated_at from demo_evaluations order by g`;
    // Each evaluation's rule.evaluated, published a second after it was staged.
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, published_at)
      select d.evaluation_id, 'rule_evaluation', e.id::text, 'rule.evaluated',
             jsonb_build_object('evaluationId', e.id::text, 'eventId', d.event_id, 'eventType', d.event_type, 'outcome', d.outcome,
                                'matchedRules', to_jsonb(d.matched), 'ruleSet', ${ACTIVE_RULE_SET}::text, 'snapshotId', d.snapshot_id::text, 'snapshotVersion', d.version),
             '{}'::jsonb, d.evaluated_at, d.evaluated_at + interval '1 second'
      from demo_evaluations d join rule_evaluations e using (event_id)`;
    // Announcements of earlier archive batches.
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, published_at)
      select id, 'archive', id::text, 'rules.archive.batch',
             jsonb_build_object('archiveId', id, 'table', 'rule_evaluations', 'rows', 5000), '{}'::jsonb, at, at + interval '2 seconds'
      from (select gen_random_uuid() as id, now() - make_interval(days => 1 + g % 200) as at from generate_series(1, ${Math.max(2, Math.floor(aged / 100))}) g) o`;
    return v2!.id;
  });
  // The preview an operator ran before version 2 took over, through the service's own writer.
  await createPreview(sql, { ruleSet: ACTIVE_RULE_SET, snapshotId: v2Id, sample: 1000 });
}

/** A candidate rule set the demo keeps revising (never `default`: the demo does not change what the consumer applies). */
const DEMO_RULE_SET = 'demo-candidate';

async function call(context: { readonly signal: AbortSignal; readonly adminToken: string }, url: string, body?: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    signal: context.signal,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${context.adminToken}` } }),
  });
  if (!res.ok) throw new Error(`${body === undefined ? 'GET' : 'POST'} ${new URL(url).pathname} answered ${res.status}`);
  return res.json();
}

/**
 * Rules' demo traffic: every tick a read of recent evaluations; every 30th tick a new version of
 * a candidate rule set (its severity threshold drawn at random) and a promotion preview of it.
 */
export const demo: ServiceDemo = {
  seedAgedHistory,
  async tick(context) {
    const base = context.urlOf('rules');
    if (!base) return;
    await call(context, `${base}/v1/evaluations?limit=20`);
    if (context.tick % 30 !== 0) return;
    const severities = SEVERITIES.slice(Math.floor(context.random() * SEVERITIES.length));
    const rules = [{ name: 'safety-severity', when: { eventType: 'safety.*', field: 'severity', op: 'in', value: severities }, outcome: 'flag' }];
    const posted = (await call(context, `${base}/v1/rule-sets/${DEMO_RULE_SET}/snapshots`, { rules, createdBy: 'devstack' })) as { snapshot: { id: string } };
    await call(context, `${base}/v1/rule-sets/${DEMO_RULE_SET}/previews`, { snapshotId: posted.snapshot.id, sample: 500 });
  },
  tables: ['rule_evaluations', 'rule_set_snapshots', 'rule_set_promotion_previews', 'archive_ledger', 'event_outbox', 'event_inbox'],
};
