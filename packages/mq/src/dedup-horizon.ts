// The fleet-wide dedup horizon (ADR-058): a consumer's inbox must keep its dedup records longer
// than any producer it hears from may replay. Settings check the rule within one service; the
// producer's windows travel on every message (transport headers) so each consumer checks it
// against its peers at runtime, and `pnpm xtask fleet check` checks it from the settings.
import type { Sql } from '@craig/db';
import { replayWindowDays, type RetentionWindows } from './internal/horizon.ts';

/** Transport header on every published message: the producer's EVENT_OUTBOX_RETENTION_DAYS. */
export const OUTBOX_RETENTION_HEADER = 'craig-outbox-retention-days';
/** Transport header on every published message: the producer's EVENT_INBOX_RETENTION_DAYS (bounds its replays when its outbox sweep is off). */
export const INBOX_RETENTION_HEADER = 'craig-inbox-retention-days';

/** The headers the outbox worker puts on every message it publishes. */
export function retentionHeaders(windows: RetentionWindows): Readonly<Record<string, string>> {
  return Object.freeze({ [OUTBOX_RETENTION_HEADER]: String(windows.outboxDays), [INBOX_RETENTION_HEADER]: String(windows.inboxDays) });
}

/** A producer's windows as its headers carry them; `inboxDays` undefined when it did not send it. */
export interface ProducerWindows {
  readonly outboxDays: number;
  readonly inboxDays?: number | undefined;
}

/** The producer's windows read from a message's headers (`missing`: an older producer; `malformed`: not whole days). */
export function producerWindowsOf(headers: Readonly<Record<string, string>>): ProducerWindows | 'missing' | 'malformed' {
  const outbox = headers[OUTBOX_RETENTION_HEADER];
  if (outbox === undefined) return 'missing';
  const inbox = headers[INBOX_RETENTION_HEADER];
  const days = (raw: string) => (/^[0-9]{1,4}$/.test(raw) ? Number(raw) : undefined);
  const outboxDays = days(outbox);
  const inboxDays = inbox === undefined ? undefined : days(inbox);
  if (outboxDays === undefined || (inbox !== undefined && inboxDays === undefined)) return 'malformed';
  return { outboxDays, inboxDays };
}

/** The rule's verdict for one producer → consumer pair. */
export interface HorizonComparison {
  /** `inbox ≥ replay window + 1` (or the consumer never prunes its dedup records). */
  readonly ok: boolean;
  /** Days back the producer may replay: its outbox window (inbox window - 1 with its outbox sweep off); `null`: no limit. */
  readonly replayDays: number | null;
  /** Consumer inbox window - replay days: ≥ 1 is safe. `Infinity` when the consumer keeps its records forever, `-Infinity` when the producer replays without limit. */
  readonly marginDays: number;
}

/**
 * The dedup horizon between a producer and one consumer (seed 000 §D3.1): the consumer's
 * dedup records must outlive every replayable outbox row of the producer by a day (the prune
 * cadence and clock skew between two databases). The same rule the settings enforce within a
 * service, across two.
 */
export function compareDedupHorizon(producer: ProducerWindows, consumerInboxDays: number): HorizonComparison {
  const replayDays = replayWindowDays(producer);
  if (consumerInboxDays === 0) return { ok: true, replayDays, marginDays: Infinity };
  if (replayDays === null) return { ok: false, replayDays, marginDays: -Infinity };
  const marginDays = consumerInboxDays - replayDays;
  return { ok: marginDays >= 1, replayDays, marginDays };
}

/** `CRAIG_<SERVICE>__<KEY>`: the variable that sets a service's own value (the fleet default is `CRAIG__<KEY>`). */
export function serviceVariable(service: string, key: string): string {
  return `CRAIG_${service.toUpperCase().replaceAll('-', '_')}__${key}`;
}

/** One row of `dedup_horizon_observations`: what a consumer last saw of a producer. */
export interface DedupHorizonObservation {
  /** The inbox consumer (subscription) that saw it. */
  readonly consumer: string;
  readonly producer: string;
  readonly producerOutboxDays: number;
  readonly producerInboxDays: number | null;
  readonly consumerInboxDays: number;
  readonly violated: boolean;
  readonly observedAt: Date;
}

/** Every consumer's last observation of every producer, in this service's database (`pnpm xtask invariants`). */
export async function readDedupHorizonObservations(sql: Sql): Promise<DedupHorizonObservation[]> {
  const rows = await sql<{ consumer: string; producer: string; producer_outbox_days: number; producer_inbox_days: number | null; consumer_inbox_days: number; violated: boolean; observed_at: Date }[]>`
    select consumer, producer, producer_outbox_days, producer_inbox_days, consumer_inbox_days, violated, observed_at
    from dedup_horizon_observations order by consumer, producer`;
  return rows.map((r) => ({
    consumer: r.consumer,
    producer: r.producer,
    producerOutboxDays: r.producer_outbox_days,
    producerInboxDays: r.producer_inbox_days,
    consumerInboxDays: r.consumer_inbox_days,
    violated: r.violated,
    observedAt: r.observed_at,
  }));
}
