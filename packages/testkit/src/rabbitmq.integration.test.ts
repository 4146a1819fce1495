import amqp from 'amqplib';
import { describe, expect, it } from 'vitest';
import { rabbitmq } from './rabbitmq.ts';

describe('rabbitmq', () => {
  it('gives the URL of a broker that accepts a connection', async () => {
    const url = await rabbitmq();
    const connection = await amqp.connect(url);
    try {
      const channel = await connection.createChannel();
      const { queue } = await channel.assertQueue('', { exclusive: true });
      channel.sendToQueue(queue, Buffer.from('ping'));
      const message = await new Promise<amqp.GetMessage | false>((resolve) => setTimeout(() => void channel.get(queue).then(resolve), 50));
      expect(message && message.content.toString()).toBe('ping');
    } finally {
      await connection.close();
    }
  });
});
