// The consumer side of the fleet-wide dedup horizon: every delivery's producer windows
// (transport headers) against this consumer's inbox window. A violation never refuses the
// event (that would stall the fleet on a settings mistake): it is counted, warned about once an
// hour per producer, and recorded where `pnpm xtask invariants` reads it.
import type { Sql } from '@craig/db';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { compareDedupHorizon, producerWindowsOf, serviceVariable, type ProducerWindows } from '../dedup-horizon.ts';
import type { EventEnvelope } from '../envelope.ts';
import { perRegistry } from '../metrics.ts';
import type { Delivery } from '../transport.ts';

/** What a consumer checks the producers' windows against. */
export interface DedupHorizonOptions {
  /** The consuming service: the `consumer` label and the service named in the warning. */
  readonly service: string;
  /** Its EVENT_INBOX_RETENTION_DAYS (0: its dedup records are never pruned, so nothing can violate it). */
  readonly inboxDays: number;
  /** Milliseconds since the epoch; a seam for tests of the hourly warning and record. */
  readonly clock?: () => number;
}

const HOUR_MS = 3_600_000;

const violations = perRegistry((registry): Counter<'producer' | 'consumer'> => new Counter({
  name: 'dedup_horizon_violations_total',
  help: "Deliveries whose producer may replay past this consumer's dedup records (inbox window < the producer's outbox window + 1); the event is still processed.",
  labelNames: ['producer', 'consumer'],
  registers: [registry],
}));

const unchecked = perRegistry((registry): Counter<'producer' | 'consumer' | 'reason'> => new Counter({
  name: 'dedup_horizon_unchecked_total',
  help: 'Deliveries that carried no producer windows to check (reason missing: an older producer; malformed: not whole days).',
  labelNames: ['producer', 'consumer', 'reason'],
  registers: [registry],
}));

interface Seen {
  warnedAt: number;
  recordedAt: number;
  recorded: string;
}

/** The per-delivery check an inbox consumer runs before its dedup insert. */
export function dedupHorizonCheck(options: DedupHorizonOptions & { readonly consumer: string; readonly sql: Sql; readonly registry: Registry | undefined; readonly logger: Logger }): (event: EventEnvelope, delivery: Delivery) => Promise<void> {
  const { service, inboxDays, consumer, sql, logger } = options;
  if (!Number.isInteger(inboxDays) || inboxDays < 0) throw new RangeError(`inboxDays must be a whole number of days ≥ 0: ${inboxDays}`);
  const clock = options.clock ?? Date.now;
  const violated = options.registry ? violations(options.registry) : undefined;
  const skipped = options.registry ? unchecked(options.registry) : undefined;
  const seen = new Map<string, Seen>();

  async function record(producer: string, windows: ProducerWindows, bad: boolean, now: number): Promise<void> {
    const key = `${windows.outboxDays}/${windows.inboxDays ?? ''}/${inboxDays}/${bad}`;
    const memo = seen.get(producer) ?? { warnedAt: -Infinity, recordedAt: -Infinity, recorded: '' };
    seen.set(producer, memo);
    if (memo.recorded === key && now - memo.recordedAt < HOUR_MS) return;
    // Claimed before the write so concurrent deliveries do not all write; given back on failure.
    const before = { recordedAt: memo.recordedAt, recorded: memo.recorded };
    memo.recordedAt = now;
    memo.recorded = key;
    try {
      await sql`
        insert into dedup_horizon_observations (consumer, producer, producer_outbox_days, producer_inbox_days, consumer_inbox_days, violated)
        values (${consumer}, ${producer}, ${windows.outboxDays}, ${windows.inboxDays ?? null}, ${inboxDays}, ${bad})
        on conflict (consumer, producer) do update
        set producer_outbox_days = excluded.producer_outbox_days, producer_inbox_days = excluded.producer_inbox_days,
            consumer_inbox_days = excluded.consumer_inbox_days, violated = excluded.violated, observed_at = now()`;
    } catch (error) {
      Object.assign(memo, before);
      logger.warn({ consumer, producer, err: error }, 'could not record the dedup horizon observation; the next delivery tries again');
    }
  }

  return async (event, delivery) => {
    const producer = event.source;
    const windows = producerWindowsOf(delivery.headers);
    if (typeof windows === 'string') {
      skipped?.inc({ producer, consumer: service, reason: windows });
      return;
    }
    const verdict = compareDedupHorizon(windows, inboxDays);
    const now = clock();
    if (!verdict.ok) {
      violated?.inc({ producer, consumer: service });
      const memo = seen.get(producer);
      if (!memo || now - memo.warnedAt >= HOUR_MS) {
        if (memo) memo.warnedAt = now;
        else seen.set(producer, { warnedAt: now, recordedAt: -Infinity, recorded: '' });
        logger.warn(
          { producer, consumer: service, subscription: consumer, producerOutboxDays: windows.outboxDays, producerInboxDays: windows.inboxDays, consumerInboxDays: inboxDays, replayDays: verdict.replayDays },
          violationMessage(producer, windows, service, inboxDays, verdict.replayDays),
        );
      }
    }
    await record(producer, windows, !verdict.ok, now);
  };
}

function violationMessage(producer: string, windows: ProducerWindows, consumer: string, inboxDays: number, replayDays: number | null): string {
  const outbox = `${serviceVariable(producer, 'EVENT_OUTBOX_RETENTION_DAYS')}=${windows.outboxDays}`;
  const inbox = `${serviceVariable(consumer, 'EVENT_INBOX_RETENTION_DAYS')}=${inboxDays}`;
  const reach =
    replayDays === null
      ? `${producer} may replay without limit (${outbox}, ${serviceVariable(producer, 'EVENT_INBOX_RETENTION_DAYS')}=${windows.inboxDays ?? '?'}: both sweeps off)`
      : windows.outboxDays === 0
        ? `${producer} may replay ${replayDays} days back (${outbox}: its outbox sweep is off, so ${serviceVariable(producer, 'EVENT_INBOX_RETENTION_DAYS')}=${windows.inboxDays} - 1 bounds its replays)`
        : `${producer} may replay ${replayDays} days back (${outbox})`;
  const need = replayDays === null ? 'must be 0 (kept forever)' : `must be at least ${replayDays + 1}`;
  return `dedup horizon violated: ${reach} but ${consumer} keeps its dedup records ${inboxDays} days (${inbox}); the inbox window of ${consumer} ${need}, or a replayed event runs its side effects twice. The event is still processed. Move the windows fleet-wide (pnpm xtask fleet check).`;
}
