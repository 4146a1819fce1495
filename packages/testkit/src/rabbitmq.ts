import { tcpReachable } from './internal/net.ts';

/**
 * The URL of a real RabbitMQ: `AMQP_URL` when set, else amqp://guest:guest@127.0.0.1:5672.
 * There is no embedded fallback; an unreachable broker fails loudly rather than skipping tests.
 */
export async function rabbitmq(): Promise<string> {
  const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === 'amqps:' ? 5671 : 5672));
  if (!(await tcpReachable(u.hostname, port, 2000))) {
    throw new Error(`RabbitMQ is not reachable at ${u.hostname}:${port} (set AMQP_URL, or start it: rabbitmq-server -detached)`);
  }
  return url;
}
