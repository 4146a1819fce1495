import type { ConsumerOptions } from '@craig/service';
import type { TransactionSql } from '@craig/db';
import { InvalidEventError, startConsumer, type EventEnvelope, type Subscription } from '@craig/mq';
import pino from 'pino';
import { startScreening } from './screenings.ts';
import { EXCHANGE_EVENTS } from './events.ts';
import { queueSendJob } from './send-jobs.ts';

/** The inbox consumer of opened cases. */
export const CASES_CONSUMER = EXCHANGE_EVENTS.consumer('exchange.cases').consumer;
/** Exchange reacts to opened cases only. */
export const CASES_PATTERNS: readonly string[] = EXCHANGE_EVENTS.consumer('exchange.cases').patterns;
/** Where a case's send job goes when the event names no destination. */
export const DEFAULT_DESTINATION = 'ssa-gateway';
/** Most people one screening run takes from an event. */
export const MAX_PERSON_REFS = 20;

const MAX_TEXT = 200;

/**
 * What `case.opened` asks of exchange: the case id is the event's aggregate id; the payload may
 * name a `destination` and the `personRefs` to screen (default: the case's child and guardian).
 * A payload field that is present but malformed is an `InvalidEventError` naming it: the
 * handler fails, and the message is retried and dead-lettered like any failed delivery.
 */
export function parseCaseOpened(event: EventEnvelope): { caseId: string; destination: string; personRefs: string[] } {
  const caseId = event.aggregateId;
  const payload = (event.payload !== null && typeof event.payload === 'object' && !Array.isArray(event.payload) ? event.payload : {}) as Record<string, unknown>;
  let destination = DEFAULT_DESTINATION;
  if (payload.destination !== undefined) {
    if (typeof payload.destination !== 'string' || payload.destination.length === 0 || payload.destination.length > MAX_TEXT) {
      throw new InvalidEventError('payload.destination', payload.destination, `must be a string of 1 to ${MAX_TEXT} characters`);
    }
    destination = payload.destination;
  }
  let personRefs = [`${caseId}:child`, `${caseId}:guardian`];
  if (payload.personRefs !== undefined) {
    const refs = payload.personRefs;
    if (!Array.isArray(refs) || refs.length === 0 || refs.length > MAX_PERSON_REFS || refs.some((r) => typeof r !== 'string' || r.length === 0 || r.length > MAX_TEXT)) {
      throw new InvalidEventError('payload.personRefs', refs, `must be a list of 1 to ${MAX_PERSON_REFS} strings of 1 to ${MAX_TEXT} characters`);
    }
    personRefs = refs as string[];
  }
  return { caseId, destination, personRefs };
}

/**
 * The handler's writes, in the inbox transaction: one send job for the case and one screening
 * run with a pending member per person. A redelivered or replayed event finds its inbox record
 * and writes nothing.
 */
export async function onCaseOpened(tx: TransactionSql, event: EventEnvelope): Promise<void> {
  const opened = parseCaseOpened(event);
  await queueSendJob(tx, { caseId: opened.caseId, destination: opened.destination });
  await startScreening(tx, { caseId: opened.caseId, personRefs: opened.personRefs });
}

/** The transport, pool, retry and delivery bounds, registry, logger and dedup-horizon check (`consumerOptions(service, deps, logger)` from @craig/service). */
export type CasesConsumerOptions = ConsumerOptions;

/** Subscribe `exchange.cases` to `case.opened` with the inbox-wrapped {@link onCaseOpened}. */
export function startCasesConsumer(options: CasesConsumerOptions): Promise<Subscription> {
  return startConsumer({
    transport: options.transport,
    sql: options.sql,
    consumer: CASES_CONSUMER,
    patterns: CASES_PATTERNS,
    maxRetries: options.maxRetries,
    maxDeliveries: options.maxDeliveries,
    registry: options.registry,
    horizon: options.horizon,
    logger: options.logger ?? pino({ level: 'silent' }),
    handler: (event, tx) => onCaseOpened(tx, event),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
  });
}
