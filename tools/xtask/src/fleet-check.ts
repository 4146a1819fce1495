// The fleet-wide dedup horizon from the settings (ADR-058): every producer → consumer pair of
// the subscription graph (the services' own event catalogs), each side's window read from the
// environment exactly as that service reads it, compared with the rule the consumers check at
// runtime (`compareDedupHorizon` from @craig/mq).
import { compareDedupHorizon, subscriptionGraph, type EventCatalog } from '@craig/mq';
import { loadSettingsParts, SettingsError, settingSource, type Env, type ServiceProfile } from '@craig/settings';

/** One window of one service: its value and the variable it came from. */
export interface FleetWindow {
  readonly days: number;
  /** `CRAIG_<SVC>__<KEY>` or `CRAIG__<KEY>`; the service's own variable when defaulted. */
  readonly variable: string;
  readonly fromDefault: boolean;
}

/** A producer and a consumer service, the events between them, both windows and the margin. */
export interface FleetPair {
  readonly producer: string;
  readonly consumer: string;
  /** The consumer's inbox consumers that receive them. */
  readonly subscriptions: readonly string[];
  readonly eventTypes: readonly string[];
  readonly producerOutbox: FleetWindow;
  /** Bounds the producer's replays only when its outbox sweep is off (outbox window 0). */
  readonly producerInbox: FleetWindow;
  readonly consumerInbox: FleetWindow;
  /** Days back the producer may replay; `null`: without limit (both its sweeps off). */
  readonly replayDays: number | null;
  /** Consumer inbox window - replay days (±Infinity: unbounded); below 1 the pair fails. */
  readonly marginDays: number;
  readonly ok: boolean;
  /** For a failing pair: what is wrong, naming both variables and both values. */
  readonly problem?: string;
}

export interface FleetReport {
  readonly ok: boolean;
  /** Services that would refuse their settings (their pairs are still checked when both windows are whole days). */
  readonly refused: ReadonlyArray<{ readonly service: string; readonly error: SettingsError }>;
  readonly pairs: readonly FleetPair[];
}

/** A service of the fleet: its settings profile and its declared events. */
export interface FleetMember {
  readonly profile: ServiceProfile;
  readonly events: EventCatalog;
}

/** Check every pair of the fleet against the environment. */
export function checkFleet(members: readonly FleetMember[], env: Env): FleetReport {
  const refused: Array<{ service: string; error: SettingsError }> = [];
  const windows = new Map<string, { outbox: FleetWindow; inbox: FleetWindow }>();
  for (const m of members) {
    const source = (key: string, days: number | undefined): FleetWindow | undefined => {
      const s = settingSource(m.profile, key, env);
      // A refused service's windows as written, when they are whole days: its pairs are still checked.
      const value = days ?? (s.raw !== undefined && /^[0-9]{1,4}$/.test(s.raw) && Number(s.raw) <= 3650 ? Number(s.raw) : undefined);
      return value === undefined ? undefined : { days: value, variable: s.variable, fromDefault: s.fromDefault };
    };
    let retention: { outboxDays: number; inboxDays: number } | undefined;
    try {
      // As the service reads them: every key, the unknown-key check and the service's own dedup rule.
      retention = loadSettingsParts(m.profile, env, ['retention']).retention;
    } catch (error) {
      if (!(error instanceof SettingsError)) throw error;
      refused.push({ service: m.profile.name, error });
    }
    const outbox = source('EVENT_OUTBOX_RETENTION_DAYS', retention?.outboxDays);
    const inbox = source('EVENT_INBOX_RETENTION_DAYS', retention?.inboxDays);
    if (outbox && inbox) windows.set(m.profile.name, { outbox, inbox });
  }

  // One pair per producer and consumer service: all of a consumer's subscriptions share its inbox window.
  const byPair = new Map<string, { producer: string; consumer: string; subscriptions: Set<string>; eventTypes: Set<string> }>();
  for (const edge of subscriptionGraph(members.map((m) => m.events))) {
    const key = `${edge.producer}\u0000${edge.consumer}`;
    const pair = byPair.get(key) ?? { producer: edge.producer, consumer: edge.consumer, subscriptions: new Set(), eventTypes: new Set() };
    byPair.set(key, pair);
    pair.subscriptions.add(edge.subscription);
    for (const t of edge.eventTypes) pair.eventTypes.add(t);
  }

  const pairs: FleetPair[] = [];
  for (const p of byPair.values()) {
    const producer = windows.get(p.producer);
    const consumer = windows.get(p.consumer);
    if (!producer || !consumer) continue; // a window that is not whole days: refused above, reported there
    const verdict = compareDedupHorizon({ outboxDays: producer.outbox.days, inboxDays: producer.inbox.days }, consumer.inbox.days);
    const pair: FleetPair = {
      producer: p.producer,
      consumer: p.consumer,
      subscriptions: [...p.subscriptions],
      eventTypes: [...p.eventTypes],
      producerOutbox: producer.outbox,
      producerInbox: producer.inbox,
      consumerInbox: consumer.inbox,
      replayDays: verdict.replayDays,
      marginDays: verdict.marginDays,
      ok: verdict.ok,
    };
    pairs.push(verdict.ok ? pair : { ...pair, problem: problemOf(pair) });
  }
  return { ok: refused.length === 0 && pairs.every((p) => p.ok), refused, pairs };
}

const shown = (w: FleetWindow) => `${w.variable}=${w.days}${w.fromDefault ? ' (default)' : ''}`;

function problemOf(p: FleetPair): string {
  const pair = `${p.producer} → ${p.consumer}`;
  if (p.replayDays === null) {
    return `${pair}: ${p.producer} replays without limit (${shown(p.producerOutbox)}, ${shown(p.producerInbox)}: both sweeps off) but ${p.consumer} prunes its dedup records after ${shown(p.consumerInbox)} days`;
  }
  const reach = p.producerOutbox.days === 0 ? `${shown(p.producerOutbox)}, so ${shown(p.producerInbox)} - 1 = ${p.replayDays}` : shown(p.producerOutbox);
  return `${pair}: ${shown(p.consumerInbox)} < ${reach} + 1 (margin ${p.marginDays} d, needs at least 1): a replay from ${p.producer} can run the side effects of ${p.consumer} twice`;
}

/** A margin as the table prints it. */
export function formatMargin(days: number): string {
  if (days === Infinity) return '∞ (inbox sweep off)';
  if (days === -Infinity) return '-∞ (no replay limit)';
  return `${days} d`;
}
