import type { Logger } from 'pino';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';
import { createRabbitMqTransport } from './rabbitmq-transport.ts';
import type { Transport } from './transport.ts';

/** The transport section of a service's settings (TRANSPORT, BUS_DATABASE_URL, AMQP_URL, AMQP_EXCHANGE). */
export type TransportChoice =
  | { readonly kind: 'postgres'; readonly busDatabaseUrl: string }
  | { readonly kind: 'rabbitmq'; readonly amqpUrl: string; readonly exchange: string };

/** Open the transport the settings choose. */
export function createTransport(choice: TransportChoice, options: { readonly service: string; readonly logger?: Logger }): Promise<Transport> {
  const logger = options.logger ? { logger: options.logger } : {};
  return choice.kind === 'postgres'
    ? createPostgresBusTransport({ url: choice.busDatabaseUrl, service: options.service, ...logger })
    : createRabbitMqTransport({ url: choice.amqpUrl, exchange: choice.exchange, service: options.service, ...logger });
}
