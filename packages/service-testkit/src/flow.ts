import { randomBytes } from 'node:crypto';
import { createClient, migrationTemplate, type MigrationSet, type Sql } from '@craig/db';
import { decodeEnvelope, startConsumer, type ConsumerOptions, type EventEnvelope, type Subscription } from '@craig/mq';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { ADMIN_TOKEN, type CommonDeps } from './harness.ts';
import { runtimeRoleOf, runtimeUrl } from './runtime.ts';
import { testTransport, type TransportKind } from './transport.ts';

/** What a fleet member must be: an app, an outbox worker to run, and the consumers it declares (if any). */
export interface FleetService {
  readonly app: FastifyInstance;
  readonly outbox: { run(signal: AbortSignal): Promise<void> };
  readonly consumers?: readonly (Omit<ConsumerOptions, 'transport' | 'sql' | 'maxRetries'> & { readonly maxRetries?: number })[];
}

/** One service of a fleet: built by its own `createService` on its own database and transport connection. */
export interface FleetMember<S extends FleetService> {
  readonly name: string;
  readonly migrations: readonly MigrationSet[];
  /** The member's transport-sweep windows (EVENT_OUTBOX/INBOX_RETENTION_DAYS); default 30 / 31. */
  readonly retention?: { readonly outboxDays: number; readonly inboxDays: number };
  /** The runtime role it logs in as; default `craig_<name>_app`. */
  readonly role?: string;
  /** `suffix` is unique per fleet on RabbitMQ (append it to consumer names), empty on the bus. */
  build(deps: CommonDeps & { readonly outbox: { readonly pollIntervalMs: number } }, suffix: string): S;
}

/** Services running together over one transport, outbox workers and consumers running, and a listener. */
export interface Fleet<P extends FleetService, C extends FleetService> {
  readonly producer: P;
  readonly consumer: C;
  /** Every event the listener received (patterns `listen`), in arrival order. */
  readonly events: EventEnvelope[];
  /** The members' pools (their own databases). */
  readonly sql: { readonly producer: Sql; readonly consumer: Sql };
  stop(): Promise<void>;
}

/**
 * A producer and a consumer service over a real transport (its own PostgreSQL bus database, or
 * its own RabbitMQ exchange `craig.test.flow.<random>` with suffixed consumer names), each on its
 * own migrated database and transport connection with its own windows, plus a listener on
 * `listen`. The consumer's declared consumers are subscribed as the boot helper does (its
 * registry, its dedup-horizon check). `stop` stops everything and deletes the databases,
 * queues and exchanges.
 */
export async function startFleet<P extends FleetService, C extends FleetService>(
  kind: TransportKind,
  options: { readonly producer: FleetMember<P>; readonly consumer: FleetMember<C>; readonly listen: readonly string[] },
): Promise<Fleet<P, C>> {
  const suffix = kind === 'rabbitmq' ? `.${randomBytes(3).toString('hex')}` : '';
  const listener = `flow.listener${suffix}`;
  const queues: string[] = [listener];
  const bus = await testTransport(kind, { name: 'flow', queues });
  const members = [options.producer, options.consumer] as const;
  const roles = members.map((m) => m.role ?? runtimeRoleOf(m.name));
  const dbs: TestDatabase[] = await Promise.all(members.map((m, i) => testDatabase({ prefix: `${m.name}_t`, template: migrationTemplate(m.migrations, 'test', { role: roles[i]! }), max: 1 })));
  const urls = dbs.map((d, i) => runtimeUrl(d.url, roles[i]!));
  const [producerTransport, consumerTransport, listenerTransport] = await Promise.all([bus.open(options.producer.name), bus.open(options.consumer.name), bus.open('listener')]);
  const transports = [producerTransport, consumerTransport] as const;
  const pools: Sql[] = members.map((m, i) => createClient(urls[i]!, { service: m.name, max: 3, idleTimeoutSeconds: 5 }));
  const deps = (i: 0 | 1) => ({
    sql: pools[i]!,
    databaseUrl: urls[i]!,
    registry: new Registry(),
    adminToken: ADMIN_TOKEN,
    transport: transports[i],
    retention: members[i].retention ?? { outboxDays: 30, inboxDays: 31 },
    outboxMaxAttempts: 10,
    outbox: { pollIntervalMs: 50 },
  });
  const consumerDeps = deps(1);
  const producer = options.producer.build(deps(0), suffix);
  const consumer = options.consumer.build(consumerDeps, suffix);
  const events: EventEnvelope[] = [];
  const specs = consumer.consumers ?? [];
  queues.push(...specs.map((s) => s.consumer));
  const subscriptions: Subscription[] = [
    // As the boot helper subscribes them: the consumer's registry, and its inbox window for the dedup-horizon check.
    ...(await Promise.all(
      specs.map((spec) =>
        startConsumer({ ...spec, maxRetries: 3, transport: consumerTransport, sql: pools[1]!, registry: consumerDeps.registry, horizon: { service: options.consumer.name, inboxDays: consumerDeps.retention.inboxDays } }),
      ),
    )),
    await listenerTransport.subscribe({ consumer: listener, patterns: [...options.listen], maxRetries: 0 }, async (d) => void events.push(decodeEnvelope(d.body))),
  ];
  const stop = new AbortController();
  const workers = [producer.outbox.run(stop.signal), consumer.outbox.run(stop.signal)];
  return {
    producer,
    consumer,
    events,
    sql: { producer: pools[0]!, consumer: pools[1]! },
    async stop() {
      stop.abort();
      await Promise.all(workers);
      for (const s of subscriptions) await s.close();
      await Promise.all([producer.app.close(), consumer.app.close()]);
      await Promise.all([producerTransport.close(), consumerTransport.close(), listenerTransport.close()]);
      await Promise.all(pools.map((p) => p.end({ timeout: 1 })));
      await Promise.all(dbs.map((d) => d.drop()));
      await bus.drop();
    },
  };
}
