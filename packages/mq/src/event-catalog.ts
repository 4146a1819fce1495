// What a service publishes and what it consumes, declared once. The service's code stages its
// events and subscribes its consumers through the declaration (`type()`, `consumer()`), so the
// fleet's subscription graph (who consumes whose events: `pnpm xtask fleet check`) is read from
// the same place the code is, and cannot drift from it.
import { InvalidEventError } from './errors.ts';
import { assertRoutingKey, assertTopicPattern, topicMatches } from './internal/topic.ts';
import { assertConsumerName } from './transport.ts';

/** One inbox consumer of a service: its durable name and its topic patterns. */
export interface ConsumerDeclaration<C extends string = string> {
  readonly consumer: C;
  readonly patterns: readonly string[];
}

/** A service's events: the types its outbox stages, and its inbox consumers. */
export interface EventCatalog<T extends string = string, C extends string = string> {
  readonly service: string;
  readonly publishes: readonly T[];
  readonly consumes: readonly ConsumerDeclaration<C>[];
  /** A declared event type, for `stageEvent`; throws `InvalidEventError` for one that is not declared. */
  type<E extends T>(eventType: E): E;
  /** A declared consumer (its name and patterns), for `startConsumer`; throws for one that is not declared. */
  consumer(name: C): ConsumerDeclaration<C>;
}

/**
 * Declare a service's events. Event types must be routing keys, patterns topic patterns,
 * consumer names durable consumer names, each declared once.
 */
export function defineEventCatalog<const T extends string, const C extends string = never>(declaration: {
  readonly service: string;
  readonly publishes: readonly T[];
  readonly consumes?: readonly ConsumerDeclaration<C>[];
}): EventCatalog<T, C> {
  const publishes = Object.freeze([...declaration.publishes]);
  for (const type of publishes) assertRoutingKey(type, 'publishes');
  if (new Set(publishes).size !== publishes.length) throw new InvalidEventError('publishes', publishes, 'lists an event type twice');
  const consumes = Object.freeze(
    (declaration.consumes ?? []).map((c) => {
      assertConsumerName(c.consumer);
      if (c.patterns.length === 0) throw new InvalidEventError(`consumes.${c.consumer}.patterns`, c.patterns, 'must list at least one pattern');
      for (const pattern of c.patterns) assertTopicPattern(pattern);
      return Object.freeze({ consumer: c.consumer, patterns: Object.freeze([...c.patterns]) });
    }),
  );
  if (new Set(consumes.map((c) => c.consumer)).size !== consumes.length) throw new InvalidEventError('consumes', consumes.map((c) => c.consumer), 'lists a consumer twice');
  return Object.freeze({
    service: declaration.service,
    publishes,
    consumes,
    type<E extends T>(eventType: E): E {
      if (!(publishes as readonly string[]).includes(eventType)) throw new InvalidEventError('eventType', eventType, `is not an event type ${declaration.service} declares (${publishes.join(', ') || 'none'})`);
      return eventType;
    },
    consumer(name: C): ConsumerDeclaration<C> {
      const found = consumes.find((c) => c.consumer === name);
      if (!found) throw new InvalidEventError('consumer', name, `is not a consumer ${declaration.service} declares (${consumes.map((c) => c.consumer).join(', ') || 'none'})`);
      return found;
    },
  });
}

/** One edge of the fleet's subscription graph: a consumer service that receives some of a producer's events. */
export interface SubscriptionEdge {
  readonly producer: string;
  /** The consuming service. */
  readonly consumer: string;
  /** Its inbox consumer (subscription) that receives them. */
  readonly subscription: string;
  /** The producer's event types the subscription's patterns match. */
  readonly eventTypes: readonly string[];
}

/**
 * Who consumes whose events: every consumer's patterns matched (topic rules, as both transports
 * route) against every service's published types. A service consuming its own events is an
 * edge too (security audits its own archive announcements).
 */
export function subscriptionGraph(catalogs: readonly Pick<EventCatalog, 'service' | 'publishes' | 'consumes'>[]): SubscriptionEdge[] {
  const edges: SubscriptionEdge[] = [];
  for (const producer of catalogs) {
    for (const consumer of catalogs) {
      for (const declaration of consumer.consumes) {
        const eventTypes = producer.publishes.filter((type) => declaration.patterns.some((pattern) => topicMatches(pattern, type)));
        if (eventTypes.length > 0) edges.push({ producer: producer.service, consumer: consumer.service, subscription: declaration.consumer, eventTypes });
      }
    }
  }
  return edges;
}
