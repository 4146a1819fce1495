import type { OutboxWorker } from '@craig/mq';
import { serviceCore, type ConsumerSpec, type ServiceCoreDeps } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { casesConsumer } from './consumer.ts';
import { registerRoutes } from './routes.ts';

export interface PlacementsDeps extends ServiceCoreDeps {
  /** The `case.*` consumer's durable name; default `placements.cases` (tests make it unique). */
  readonly casesConsumerName?: string;
}

export interface PlacementsService {
  readonly app: FastifyInstance;
  /** Publishes `placement.started` / `placement.ended` and runs the transport sweep; `run(signal)` it. */
  readonly outbox: OutboxWorker;
  /** The `case.*` inbox consumer; the boot helper (or a test) subscribes it. */
  readonly consumers: readonly ConsumerSpec[];
}

/** The placements service, wired from its dependencies; `main.ts` and the tests both use this. */
export function createService(deps: PlacementsDeps): PlacementsService {
  const { app, outbox } = serviceCore('placements', deps);
  registerRoutes(app, deps.sql);
  return { app, outbox, consumers: [casesConsumer(deps.casesConsumerName)] };
}
