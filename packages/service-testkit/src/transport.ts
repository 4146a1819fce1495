import { randomBytes } from 'node:crypto';
import { migrationTemplate } from '@craig/db';
import { BUS_MIGRATIONS, createPostgresBusTransport, createRabbitMqTransport, type Transport } from '@craig/mq';
import { rabbitmq, testDatabase } from '@craig/testkit';
import { connect } from 'amqplib';

export type TransportKind = 'postgres' | 'rabbitmq';

/** A transport of either kind on scratch resources (its own bus database, or its own exchange). */
export interface TestTransport {
  readonly kind: TransportKind;
  /** Open another client of the same transport (a producer, another consumer service). */
  open(service: string): Promise<Transport>;
  /**
   * The settings that put a service's `main.ts` child on this transport
   * (`CRAIG_<SVC>__TRANSPORT` with `BUS_DATABASE_URL`, or `AMQP_URL` and `AMQP_EXCHANGE`).
   */
  env(service: string): Record<string, string>;
  /** Drop the bus database, or delete the exchange, its dead-letter exchange and the named queues. */
  drop(): Promise<void>;
}

export interface TestTransportOptions {
  /** Names the bus database (`<name>_bus_…`) and the exchange (`craig.test.<name>.<random>`). */
  readonly name: string;
  /** RabbitMQ: the consumer names whose queues `drop` deletes (the dead-letter queue always is). */
  readonly queues?: readonly string[];
  /** PostgreSQL bus: how often a subscriber polls (default 100 ms, so tests wait little). */
  readonly pollIntervalMs?: number;
}

export async function testTransport(kind: TransportKind, options: TestTransportOptions): Promise<TestTransport> {
  if (kind === 'postgres') {
    const bus = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: `${options.name}_bus`, max: 1 });
    return {
      kind,
      open: (service) => createPostgresBusTransport({ url: bus.url, service, pollIntervalMs: options.pollIntervalMs ?? 100 }),
      env: (service) => ({ [`${prefix(service)}TRANSPORT`]: 'postgres', [`${prefix(service)}BUS_DATABASE_URL`]: bus.url }),
      drop: () => bus.drop(),
    };
  }
  const url = await rabbitmq();
  const exchange = `craig.test.${options.name}.${randomBytes(4).toString('hex')}`;
  return {
    kind,
    open: (service) => createRabbitMqTransport({ url, exchange, service }),
    env: (service) => ({ [`${prefix(service)}TRANSPORT`]: 'rabbitmq', [`${prefix(service)}AMQP_URL`]: url, [`${prefix(service)}AMQP_EXCHANGE`]: exchange }),
    drop: () => deleteRabbitMqExchange(url, exchange, options.queues ?? []),
  };
}

const prefix = (service: string) => `CRAIG_${service.toUpperCase()}__`;

/** Delete a test exchange, its dead-letter exchange, the queues of `consumers` and its dead-letter queue. */
export async function deleteRabbitMqExchange(url: string, exchange: string, consumers: readonly string[]): Promise<void> {
  const conn = await connect(url);
  try {
    const ch = await conn.createChannel();
    for (const c of [...consumers, 'dead-letter']) await ch.deleteQueue(`${exchange}.${c}`);
    await ch.deleteExchange(exchange);
    await ch.deleteExchange(`${exchange}.dlx`);
  } finally {
    await conn.close();
  }
}
