import { classifyPgError, createClient, type Sql, type TransactionSql } from '@craig/db';
import pino, { type Logger } from 'pino';
import { assertEventId } from './envelope.ts';
import { InvalidEventError, MessageTooLargeError, PublishRejectedError, TransportUnavailableError } from './errors.ts';
import { BusDeadLetterLoop } from './internal/bus-dead-letter-loop.ts';
import { BusEventLoop } from './internal/bus-event-loop.ts';
import { BUS_CHANNEL } from './internal/bus-loop.ts';
import { assertRoutingKey, topicRegex } from './internal/topic.ts';
import {
  assertConsumerName,
  assertDeliveryBounds,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_PREFETCH,
  defaultRetryDelayMs,
  type CloseOptions,
  type DeadLetter,
  type DeadLetterSubscribeOptions,
  type Delivery,
  type OutgoingMessage,
  type PublishOutcome,
  type SubscribeOptions,
  type Subscription,
  type Transport,
} from './transport.ts';


export interface PostgresBusTransportOptions {
  /** The bus database (settings: BUS_DATABASE_URL), migrated with {@link BUS_MIGRATIONS}. */
  readonly url: string;
  /** Becomes the connections' application_name. */
  readonly service: string;
  readonly maxMessageBytes?: number;
  /** Fallback poll when no notification arrives (a missed NOTIFY, a retry coming due); default 1 s. */
  readonly pollIntervalMs?: number;
  /** Longest a handler may run while its claim is held; the server ends the transaction after it. Default 5 min. */
  readonly handlerTimeoutMs?: number;
  readonly logger?: Logger;
}

/**
 * The PostgreSQL bus: the zero-install transport. Publishing copies each message into
 * `bus_deliveries` once per subscribed consumer whose patterns match (routing in SQL, so a
 * subscription is effective for every publish after it commits) and NOTIFYs those consumers.
 * Consumers claim with `SKIP LOCKED` and count each delivery in `bus_delivery_counts` before
 * the handler runs, so a message whose consumer dies holding it is dead-lettered after
 * `maxDeliveries` such deliveries instead of being handed out forever. Acknowledging deletes
 * the row (and its count), so the tables only ever hold undelivered messages. Dead letters move
 * to `bus_dead_letters` and stay there, counted, until the dead-letter consumer acknowledges them.
 */
export async function createPostgresBusTransport(options: PostgresBusTransportOptions): Promise<Transport> {
  const transport = new PostgresBusTransport(options);
  await transport.start();
  return transport;
}

interface Loop extends Subscription {
  wake(): void;
}

class PostgresBusTransport implements Transport {
  readonly kind = 'postgres' as const;
  readonly maxMessageBytes: number;
  private readonly sql: Sql;
  private readonly logger: Logger;
  private readonly loops = new Set<Loop>();
  private unlisten: (() => Promise<void>) | undefined;
  private publishTail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: PostgresBusTransportOptions) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.logger = options.logger ?? pino({ level: 'silent' });
    this.sql = createClient(options.url, { service: `${options.service}:bus`, max: 2 });
  }

  async start(): Promise<void> {
    const meta = await this.sql.listen(
      BUS_CHANNEL,
      (consumer) => {
        for (const loop of this.loops) if (loop.consumer === consumer) loop.wake();
      },
      // (Re)connected listener: notifications may have been missed meanwhile.
      () => {
        for (const loop of this.loops) loop.wake();
      },
    );
    this.unlisten = () => meta.unlisten();
  }

  async publish(messages: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const outcomes: PublishOutcome[] = new Array(messages.length);
    const sendable: OutgoingMessage[] = [];
    const sizes: number[] = [];
    const index: number[] = [];
    messages.forEach((m, i) => {
      const bytes = Buffer.byteLength(m.body);
      if (bytes > this.maxMessageBytes) {
        outcomes[i] = { ok: false, kind: 'too_large', error: new MessageTooLargeError(bytes, this.maxMessageBytes, m.eventId) };
        return;
      }
      try {
        assertEventId(m.eventId);
        assertRoutingKey(m.routingKey, 'routingKey');
        if (m.body.includes('\0')) throw new InvalidEventError('body', '[contains NUL]', 'must not contain the NUL character');
      } catch (error) {
        outcomes[i] = { ok: false, kind: 'rejected', error: new PublishRejectedError(m.eventId, (error as Error).message, error) };
        return;
      }
      sendable.push(m);
      sizes.push(bytes);
      index.push(i);
    });
    if (sendable.length === 0) return outcomes;
    if (this.closed) return fill(outcomes, index, { ok: false, kind: 'unavailable', error: new TransportUnavailableError('the transport is closed') });
    try {
      // Atomic: all of the call or none of it. Concurrent calls run one after another, so one
      // call's rows never interleave with another's ids.
      const insert = async (): Promise<void> => {
        // Consecutive runs of the call's messages, each with its bodies' sizes.
        let first = 0;
        const statements = publishStatements(sendable, sizes).map((part) => {
          first += part.length;
          return { part, sizes: sizes.slice(first - part.length, first) };
        });
        if (statements.length === 1) await this.insertStatement(this.sql, statements[0]!.part, statements[0]!.sizes);
        // Several statements, one transaction: still all or nothing, pipelined on one session.
        else await this.sql.begin((tx) => statements.map((s) => this.insertStatement(tx, s.part, s.sizes)));
      };
      const inserting = this.publishTail.then(insert);
      this.publishTail = inserting.then(
        () => undefined,
        () => undefined,
      );
      await inserting;
      return fill(outcomes, index, { ok: true });
    } catch (error) {
      const kind = classifyPgError(error);
      if (kind.kind === 'connection' || kind.kind === 'timeout' || kind.kind === 'lock_not_available') {
        return fill(outcomes, index, { ok: false, kind: 'unavailable', error: new TransportUnavailableError(`PostgreSQL bus unavailable: ${(error as Error).message}`, error) });
      }
      if (sendable.length === 1) {
        return fill(outcomes, index, { ok: false, kind: 'rejected', error: new PublishRejectedError(sendable[0]!.eventId, `the bus refused it: ${(error as Error).message}`, error) });
      }
      // The batch is one statement, so one refused message fails all of them. Isolate it:
      // only the culprit is charged an attempt, its batch-mates go through.
      for (const [k, m] of sendable.entries()) outcomes[index[k]!] = (await this.publish([m]))[0]!;
      return outcomes;
    }
  }

  /**
   * One statement: fan out to every matching subscription, in publish order, and notify each
   * consumer that got rows. Headers that every message shares (an outbox drain's retention
   * headers) are sent and parsed once, not once per message.
   */
  private insertStatement(sql: Sql | TransactionSql, messages: readonly OutgoingMessage[], sizes: readonly number[]) {
    const shared = sharedHeaders(messages);
    // Per-message headers are a fourth column of the zip; shared ones go once, as h below.
    const headers =
      shared === undefined
        ? { value: sql`u.headers`, column: sql`, jsonb_array_elements(${`[${messages.map((m) => headersJson(m.headers)).join(',')}]`}::text::jsonb)`, alias: sql`headers, ` }
        : { value: sql`null::jsonb`, column: sql``, alias: sql`` };
    return sql`
      with m as (
        -- A column a parameter, not a VALUES list of four or five parameters a message (16,000
        -- to bind and a 4,000-row VALUES to plan for a drain batch): ids and keys as arrays,
        -- bodies as one text split on a separator none of them holds (else one JSON array),
        -- headers as one JSON array, zipped in publish order (ADR-071).
        select u.event_id, u.routing_key, u.body, ${headers.value} as headers, u.ord
        from rows from (
          unnest(${messages.map((m) => m.eventId)}::uuid[]),
          unnest(${messages.map((m) => m.routingKey)}::text[]),
          ${bodiesColumn(sql, messages, sizes)}${headers.column}
        ) with ordinality as u(event_id, routing_key, body, ${headers.alias}ord)
      ), h as materialized (
        select ${shared ?? '{}'}::text::jsonb as headers
      ), routes as materialized (
        -- Each routing key is matched against the subscriptions once, not once per message
        -- (materialized: inlined, the planner could join the messages in first).
        select k.routing_key, s.consumer
        from (select distinct routing_key from m) k
        join bus_subscriptions s on ('.' || k.routing_key) ~ s.pattern_regex
      ), ins as (
        insert into bus_deliveries (consumer, event_id, routing_key, body, headers)
        select r.consumer, m.event_id, m.routing_key, m.body, coalesce(m.headers, h.headers)
        from m join routes r on r.routing_key = m.routing_key cross join h
        order by m.ord, r.consumer
        returning consumer
      )
      select pg_notify(${BUS_CHANNEL}, c.consumer) from (select distinct consumer from ins) c`;
  }

  async subscribe(options: SubscribeOptions, handler: (delivery: Delivery) => Promise<void>): Promise<Subscription> {
    assertConsumerName(options.consumer);
    const regex = topicRegex(options.patterns);
    const { maxRetries, maxDeliveries } = assertDeliveryBounds(options);
    this.assertOpen();
    await this.sql`
      insert into bus_subscriptions (consumer, patterns, pattern_regex)
      values (${options.consumer}, ${options.patterns as string[]}::text[], ${regex})
      on conflict (consumer) do update
        set patterns = excluded.patterns, pattern_regex = excluded.pattern_regex, updated_at = now()
        where bus_subscriptions.pattern_regex is distinct from excluded.pattern_regex`;
    const loop = new BusEventLoop({
      consumer: options.consumer,
      sql: this.consumerClient(options.consumer),
      counts: this.sql,
      prefetch: options.prefetch ?? DEFAULT_PREFETCH,
      pollIntervalMs: this.options.pollIntervalMs ?? 1000,
      logger: this.logger,
      onClosed: (l) => this.loops.delete(l),
      maxRetries,
      maxDeliveries,
      retryDelayMs: options.retryDelayMs ?? defaultRetryDelayMs,
      handler,
    });
    return this.startLoop(loop);
  }

  async subscribeDeadLetters(options: DeadLetterSubscribeOptions, handler: (deadLetter: DeadLetter) => Promise<void>): Promise<Subscription> {
    this.assertOpen();
    const loop = new BusDeadLetterLoop(
      this.consumerClient('dead-letter'),
      options.prefetch ?? DEFAULT_PREFETCH,
      this.options.pollIntervalMs ?? 1000,
      this.logger,
      (l) => this.loops.delete(l),
      options.retryDelayMs ?? defaultRetryDelayMs,
      handler,
    );
    return this.startLoop(loop);
  }

  async deadLetterCount(): Promise<number> {
    const [row] = await this.sql<{ n: number }[]>`select count(*)::int as n from bus_dead_letters`;
    return row!.n;
  }

  async close(options: CloseOptions = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.loops].map((l) => l.close(options)));
    await this.unlisten?.().catch(() => {});
    await this.sql.end({ timeout: 5 });
  }

  private assertOpen(): void {
    if (this.closed) throw new TransportUnavailableError('the transport is closed');
  }

  /** Each loop has its own connection: its claim transaction stays open while handlers run. */
  private consumerClient(consumer: string): Sql {
    const handlerTimeoutMs = this.options.handlerTimeoutMs ?? 300_000;
    return createClient(this.options.url, {
      service: `${this.options.service}:bus:${consumer}`.slice(0, 63),
      max: 1,
      idleInTransactionTimeoutMs: handlerTimeoutMs,
      idleTimeoutSeconds: 0,
    });
  }

  private startLoop(loop: Loop & { start(): void }): Subscription {
    this.loops.add(loop);
    loop.start();
    return loop;
  }
}

/**
 * Separates the bodies of one publish in a single text parameter. A drained message's body is
 * JSON, where a control character only ever appears escaped, so this one never does; a body
 * that holds it anyway sends the call's bodies as a JSON array instead.
 */
const BODY_SEPARATOR = '\x1e';

/**
 * The bodies as one set-returning column, in order. Split on {@link BODY_SEPARATOR}: cheaper to
 * build and to parse than a text[] literal (every quote escaped) or JSON (about a quarter less
 * server time, ADR-071). A single body goes as JSON: an empty text splits into no element at all.
 *
 * The text parameter goes as its UTF-8 bytes, each body written once into one buffer (`sizes`:
 * their byte lengths), not as a joined string: the driver would encode that string into a
 * buffer of its own, so each statement cost two fresh half-megabyte allocations, every page a
 * fault (ADR-085). The separator is one byte that no multi-byte UTF-8 sequence contains.
 */
function bodiesColumn(sql: Sql | TransactionSql, messages: readonly OutgoingMessage[], sizes: readonly number[]) {
  if (messages.length > 1 && !messages.some((m) => m.body.includes(BODY_SEPARATOR))) {
    let total = messages.length - 1;
    for (const size of sizes) total += size;
    const text = Buffer.allocUnsafe(total);
    let at = 0;
    for (const [i, m] of messages.entries()) {
      if (i > 0) text[at++] = SEPARATOR_BYTE;
      at += text.write(m.body, at, sizes[i]!, 'utf8');
    }
    return sql`string_to_table(${sql.typed(text, TEXT_OID)}, ${BODY_SEPARATOR})`;
  }
  return sql`json_array_elements_text(${JSON.stringify(messages.map((m) => m.body))}::text::json)`;
}

const SEPARATOR_BYTE = BODY_SEPARATOR.charCodeAt(0);
/** The text type: the driver sends a Uint8Array given as text as its bytes (patches/postgres@3.4.9.patch). */
const TEXT_OID = 25;

/**
 * Body bytes one publish statement carries at most. A statement's values live in the backend's
 * memory until it ends; past a few megabytes the C library gives them back to the kernel at
 * every statement's end, and the next statement pays a page fault for each page again
 * (ADR-075). Larger calls are split into statements of about this size, in one transaction.
 */
export const PUBLISH_STATEMENT_BYTES = 512 * 1024;

/**
 * The call's messages (`sizes`: their bodies' UTF-8 bytes) as consecutive runs of at most
 * {@link PUBLISH_STATEMENT_BYTES} of bodies, at least one message each: the statements one
 * `publish` sends (`bench drain`'s bare INSERT sends the same ones, ADR-084).
 */
export function publishStatements<M extends OutgoingMessage>(messages: readonly M[], sizes: readonly number[]): M[][] {
  const parts: M[][] = [];
  let part: M[] = [];
  let bytes = 0;
  for (const [i, m] of messages.entries()) {
    const size = sizes[i]!;
    if (part.length > 0 && bytes + size > PUBLISH_STATEMENT_BYTES) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(m);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/** The headers' JSON when every message carries the same headers object (or none), else undefined. */
function sharedHeaders(messages: readonly OutgoingMessage[]): string | undefined {
  const first = messages[0]?.headers;
  for (const m of messages) if (m.headers !== first) return undefined;
  return headersJson(first);
}

function headersJson(headers: OutgoingMessage['headers']): string {
  return JSON.stringify(headers ?? {});
}

function fill(outcomes: PublishOutcome[], index: readonly number[], outcome: PublishOutcome): PublishOutcome[] {
  for (const i of index) outcomes[i] = outcome;
  return outcomes;
}
