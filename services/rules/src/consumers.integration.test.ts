// The evaluate consumer (`rules.evaluate` on case.*, placement.*, safety.*), on both transports,
// fed by a real producer's outbox; its `rule.evaluated` goes out through rules' own outbox.
import { randomUUID } from 'node:crypto';
import { decodeEnvelope, replayEvents, stageEvent, startConsumer, type EventEnvelope, type Subscription, type Transport } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterValue, producer, serviceHarness, type Producer, type ServiceHarness } from '../test/harness.ts';
import { recordEvaluation, RULE_EVALUATED_EVENT } from './evaluation-store.ts';

describe.each(['postgres', 'rabbitmq'] as const)('rules consumer on the %s transport', (kind) => {
  let h: ServiceHarness;
  let cases: Producer;
  let consumer: Subscription;
  let listenerTransport: Transport;
  let listener: Subscription;
  const heard: EventEnvelope[] = [];

  beforeAll(async () => {
    h = await serviceHarness({ transport: kind, prefix: 'rules_cons' });
    cases = await producer(h.bus, 'cases');
    consumer = await h.service.startConsumers();
    // Another service listening for rule.evaluated (its inbox in the producer's database).
    listenerTransport = await h.bus.open('listener');
    listener = await startConsumer({
      transport: listenerTransport,
      sql: cases.db.sql,
      consumer: 'listener.evaluated',
      patterns: [RULE_EVALUATED_EVENT],
      maxRetries: 1,
      handler: async (event) => {
        heard.push(event);
      },
    });
  });
  afterAll(async () => {
    await listener?.close({ graceMs: 0 });
    await listenerTransport?.close({ graceMs: 0 });
    await consumer?.close({ graceMs: 0 });
    await cases?.drop();
    await h?.drop();
  });

  const evaluationsOf = (eventId: string) =>
    h.db.sql<{ event_type: string; outcome: string; matched_rules: string[]; input: string; version: number }[]>`
      select e.event_type, e.outcome, e.matched_rules, e.input::text as input, s.version
      from rule_evaluations e join rule_set_snapshots s on s.id = e.snapshot_id where e.event_id = ${eventId}`;

  it('evaluates each event once against the active snapshot, even when it is delivered twice, and publishes rule.evaluated once', async () => {
    const staged = await cases.db.sql.begin(async (tx) => [
      await stageEvent(tx, { aggregateType: 'safety', aggregateId: 'r-1', eventType: 'safety.reported', payload: { severity: 'critical', caseId: 'c-1' } }),
      await stageEvent(tx, { aggregateType: 'placement', aggregateId: 'p-1', eventType: 'placement.started', payload: { caseStatus: 'closed', caseId: 'c-1' } }),
      await stageEvent(tx, { aggregateType: 'case', aggregateId: 'c-2', eventType: 'case.opened', payload: { caseId: 'c-2', caseworkerId: 'w-1' } }),
      await stageEvent(tx, { aggregateType: 'case', aggregateId: 'c-3', eventType: 'case.opened', payload: { caseId: 'c-3' } }),
    ]);
    // Written as jsonb text, as a SQL writer could: the stored input keeps integers beyond 2^53.
    const big = randomUUID();
    await cases.db.sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
      values (${big}, 'safety', 'r-2', 'safety.reported', '{"severity": "low", "count": 9007199254740993}')`;
    expect((await cases.outbox.drainOnce()).published).toBe(5);
    await eventually(async () => expect((await h.db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n).toBe(5), { timeoutMs: 15_000 });

    expect(await evaluationsOf(staged[0]!.eventId)).toEqual([{ event_type: 'safety.reported', outcome: 'flag', matched_rules: ['safety-high-severity'], input: '{"caseId": "c-1", "severity": "critical"}', version: 1 }]);
    expect((await evaluationsOf(staged[1]!.eventId))[0]).toMatchObject({ outcome: 'block', matched_rules: ['placement-on-closed-case'] });
    expect((await evaluationsOf(staged[2]!.eventId))[0]).toMatchObject({ outcome: 'pass', matched_rules: [] });
    expect((await evaluationsOf(staged[3]!.eventId))[0]).toMatchObject({ outcome: 'flag', matched_rules: ['case-without-caseworker'] });
    expect((await evaluationsOf(big))[0]).toMatchObject({ outcome: 'pass', input: '{"count": 9007199254740993, "severity": "low"}' });

    // Delivered again: the producer replays everything it published.
    const duplicatesBefore = await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'rules.evaluate', outcome: 'duplicate' });
    const replayed = await replayEvents(cases.db.sql, { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() }, { outboxDays: 30, inboxDays: 31 });
    expect(replayed).toMatchObject({ replayed: 5 });
    expect((await cases.outbox.drainOnce()).published).toBe(5);
    await eventually(
      async () => expect(await counterValue(h.registry, 'event_inbox_deliveries_total', { consumer: 'rules.evaluate', outcome: 'duplicate' })).toBe(duplicatesBefore + 5),
      { timeoutMs: 15_000 },
    );
    expect((await h.db.sql`select count(*)::int as n from rule_evaluations`)[0]!.n).toBe(5);

    // One rule.evaluated per evaluation in rules' outbox, published to the fleet.
    const outbox = await h.db.sql<{ aggregate_id: string; payload: Record<string, unknown> }[]>`
      select aggregate_id, payload from event_outbox where event_type = ${RULE_EVALUATED_EVENT} order by id`;
    expect(outbox).toHaveLength(5);
    const [evaluation] = await h.db.sql<{ id: string; snapshot_id: string }[]>`select id::text, snapshot_id::text from rule_evaluations where event_id = ${staged[1]!.eventId}`;
    expect(outbox.find((o) => o.payload.eventId === staged[1]!.eventId)).toEqual({
      aggregate_id: evaluation!.id,
      payload: { evaluationId: evaluation!.id, eventId: staged[1]!.eventId, eventType: 'placement.started', outcome: 'block', matchedRules: ['placement-on-closed-case'], ruleSet: 'default', snapshotId: evaluation!.snapshot_id, snapshotVersion: 1 },
    });
    expect((await h.service.outbox.drainOnce()).published).toBe(5);
    await eventually(() => expect(heard).toHaveLength(5), { timeoutMs: 15_000 });
    expect(heard.find((e) => (e.payload as { eventId: string }).eventId === staged[0]!.eventId)).toMatchObject({ source: 'rules', eventType: 'rule.evaluated', payload: { outcome: 'flag', matchedRules: ['safety-high-severity'] } });
    expect(await counterValue(h.registry, 'rules_evaluations_total', { outcome: 'flag' })).toBe(2);
  });

  it('evaluates against the latest snapshot of default once a new version is posted', async () => {
    const { rules } = (await h.db.sql<{ rules: unknown[] }[]>`select rules from rule_set_snapshots where rule_set = 'default' and version = 1`)[0]!;
    await h.db.sql`
      insert into rule_set_snapshots (rule_set, version, rules, created_by)
      values ('default', 2, ${JSON.stringify([...rules, { name: 'low-too', when: { eventType: 'safety.#', field: 'severity', op: 'eq', value: 'low' }, outcome: 'block' }])}::text::jsonb, 'test')`;
    const staged = await cases.db.sql.begin((tx) => stageEvent(tx, { aggregateType: 'safety', aggregateId: 'r-3', eventType: 'safety.reported', payload: { severity: 'low' } }));
    expect((await cases.outbox.drainOnce()).published).toBe(1);
    await eventually(async () => expect(await evaluationsOf(staged.eventId)).toMatchObject([{ outcome: 'block', matched_rules: ['low-too'], version: 2 }]), { timeoutMs: 15_000 });
  });

  it('writes the evaluation and stages rule.evaluated in the caller transaction: a rollback leaves neither', async () => {
    const eventId = randomUUID();
    const body = JSON.stringify({ eventId, eventType: 'safety.reported', aggregateType: 'safety', aggregateId: 'r-9', source: 'safety', occurredAt: new Date().toISOString(), headers: {}, payload: { severity: 'high' } });
    const event = decodeEnvelope(body);
    await expect(
      h.sql.begin(async (tx) => {
        const result = await recordEvaluation(tx, event, body);
        expect(result).toMatchObject({ outcome: 'flag', eventId });
        expect((await tx`select count(*)::int as n from event_outbox where payload ->> 'eventId' = ${eventId}`)[0]!.n).toBe(1);
        throw new Error('crash before commit');
      }),
    ).rejects.toThrow('crash before commit');
    expect(await evaluationsOf(eventId)).toEqual([]);
    expect((await h.db.sql`select count(*)::int as n from event_outbox where payload ->> 'eventId' = ${eventId}`)[0]!.n).toBe(0);
  });
});
