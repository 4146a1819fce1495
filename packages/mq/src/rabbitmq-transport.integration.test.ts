import { randomBytes } from 'node:crypto';
import { rabbitmq } from '@craig/testkit';
import { connect } from 'amqplib';
import { transportContract } from '../test/transport-contract.ts';
import { createRabbitMqTransport } from './rabbitmq-transport.ts';

transportContract('RabbitMQ', async () => {
  const url = await rabbitmq();
  const exchange = `craig.test.${randomBytes(4).toString('hex')}`;
  const consumers = new Set<string>();
  return {
    open: () => createRabbitMqTransport({ url, exchange, service: 'contract', maxMessageBytes: 64 * 1024 }),
    consumer(label) {
      consumers.add(label);
      return label;
    },
    async teardown() {
      const conn = await connect(url);
      const ch = await conn.createChannel();
      for (const c of consumers) await ch.deleteQueue(`${exchange}.${c}`);
      await ch.deleteQueue(`${exchange}.dead-letter`);
      await ch.deleteExchange(exchange);
      await ch.deleteExchange(`${exchange}.dlx`);
      await conn.close();
    },
  };
});
