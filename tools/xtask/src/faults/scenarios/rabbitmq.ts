// RabbitMQ going away under a drain: every connection of the scenario's vhost closed by the
// broker (`rabbitmqctl close_all_connections`), twice, and (full matrix) the broker application
// stopped and started. Publishers and consumers must reconnect by themselves; a publish whose
// confirm never came stays pending and is sent again; what arrives twice is deduplicated by the
// inbox, so every event is audited exactly once.
import { count } from '../probes.ts';
import { Outcome, type FaultScenario, type ScenarioContext } from '../scenario.ts';
import { sampleValue, type FaultService, type FaultStack } from '../stack.ts';
import { sleep, waitFor } from '../wait.ts';

const EVENTS = 20_000;

interface Flow {
  readonly stack: FaultStack;
  readonly vhost: string;
  readonly cases: FaultService;
  readonly security: FaultService;
}

/** cases with EVENTS staged events, and security auditing them, over a vhost of the scenario's own. */
async function flow(ctx: ScenarioContext): Promise<Flow> {
  const vhost = `craig_faults_${Math.random().toString(36).slice(2, 9)}`;
  await ctx.rabbit!.addVhost(vhost);
  ctx.defer(() => ctx.rabbit!.deleteVhost(vhost));
  const store = await ctx.s3();
  const stack = await ctx.stack({ transport: 'rabbitmq', amqpUrl: ctx.rabbit!.url(vhost), objectStore: store });
  const security = await stack.start('security', { ARCHIVE_EVERY_MINUTES: '60' });
  await stack.migrate('cases', await stack.env('cases'));
  await stack.sql('cases')`
    insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
    select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', jsonb_build_object('subject', 'faults ' || g)
    from generate_series(1, ${EVENTS}) g`;
  const cases = await stack.start('cases');
  return { stack, vhost, cases, security };
}

async function published(flow: Flow): Promise<number> {
  return count(flow.stack.sql('cases'), 'event_outbox', 'published_at is not null');
}

/** Everything published and audited; fills the outcome's counts. */
async function settle(out: Outcome, flow: Flow, since: number): Promise<void> {
  const audit = flow.stack.sql('security');
  await waitFor(
    'every event published and audited',
    async () => (await count(flow.stack.sql('cases'), 'event_outbox', 'published_at is null')) === 0 && (await count(audit, '(select distinct event_id from audit_log) d')) >= EVENTS,
    { timeoutMs: 240_000, intervalMs: 250 },
  );
  out.recoverMs = performance.now() - since;
  await sleep(2000);
  const rows = await count(audit, 'audit_log');
  const distinct = await count(audit, '(select distinct event_id from audit_log) d');
  const metrics = await flow.security.metrics();
  const duplicates = sampleValue(metrics, 'event_inbox_deliveries_total', { outcome: 'duplicate' });
  const handled = sampleValue(metrics, 'event_inbox_deliveries_total', { outcome: 'handled' });
  out.equal('events audited', distinct, EVENTS);
  out.equal('outbox rows parked', await count(flow.stack.sql('cases'), 'event_outbox', 'parked_at is not null'), 0);
  out.equal('outbox attempts charged for the outage (an unreachable broker is not the message\'s fault)', await count(flow.stack.sql('cases'), 'event_outbox', 'attempts > 0'), 0);
  out.equal('dead letters audited', await count(audit, 'dead_letter_audit'), 0);
  // Redelivered and re-sent messages arrive again: the handler ran once per event all the same.
  out.check('handler runs (redeliveries deduplicated by the inbox)', handled === EVENTS, `${handled} handled, ${duplicates} duplicate deliveries skipped`);
  out.equal('restarts (none needed)', flow.cases.supervisor.restarts + flow.security.supervisor.restarts, 0);
  out.expected = EVENTS;
  out.kept = distinct;
  out.lost = EVENTS - distinct;
  out.duplicated = rows - distinct;
}

export const rabbitConnectionsClosed: FaultScenario = {
  name: 'rabbitmq-connections-closed',
  summary: "rabbitmqctl close_all_connections on the stack's vhost, twice, during a drain",
  fast: true,
  needs: ['rabbitmq'],
  async run(ctx) {
    const out = new Outcome('close_all_connections at 25 % and 60 % of the drain');
    const f = await flow(ctx);
    await waitFor('a quarter published', async () => (await published(f)) >= EVENTS / 4, { timeoutMs: 120_000, intervalMs: 50 });
    const first = await ctx.rabbit!.closeAllConnections(f.vhost, 'craig faults: connections dropped');
    const firstAt = performance.now();
    ctx.progress(`closed ${first} connections`);
    await waitFor('60 % published', async () => (await published(f)) >= (EVENTS * 3) / 5, { timeoutMs: 120_000, intervalMs: 50 });
    const second = await ctx.rabbit!.closeAllConnections(f.vhost, 'craig faults: connections dropped again');
    ctx.progress(`closed ${second} connections`);
    out.atLeast('connections closed the first time (publisher and consumers)', first, 2);
    out.atLeast('connections closed the second time (they had reconnected)', second, 2);
    await settle(out, f, firstAt);
    out.atLeast('connections open again at the end', (await ctx.rabbit!.connections(f.vhost)).length, 2);
    return out.result();
  },
};

export const rabbitBrokerRestart: FaultScenario = {
  name: 'rabbitmq-broker-restart',
  summary: 'the broker application stopped for 5 s and started during a drain (affects every user of this broker)',
  fast: false,
  needs: ['rabbitmq'],
  async run(ctx) {
    const out = new Outcome('rabbitmqctl stop_app, 5 s, start_app at a quarter of the drain');
    const f = await flow(ctx);
    await waitFor('a quarter published', async () => (await published(f)) >= EVENTS / 4, { timeoutMs: 120_000, intervalMs: 50 });
    const stoppedAt = performance.now();
    await ctx.rabbit!.restartBroker(5000);
    ctx.progress('broker application restarted');
    await settle(out, f, stoppedAt);
    out.atLeast('connections open again at the end', (await ctx.rabbit!.connections(f.vhost)).length, 2);
    return out.result();
  },
};
