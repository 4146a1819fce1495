import { describe, expect, it } from 'vitest';
import { cadencePhase, pruneJitter } from './cadence.ts';
import { compareDedupHorizon, INBOX_RETENTION_HEADER, OUTBOX_RETENTION_HEADER, producerWindowsOf, retentionHeaders, serviceVariable } from './dedup-horizon.ts';
import { replayWindowDays } from './internal/horizon.ts';

describe('the fleet-wide dedup horizon', () => {
  it('carries both windows of the producer as transport headers', () => {
    expect(retentionHeaders({ outboxDays: 30, inboxDays: 31 })).toEqual({ [OUTBOX_RETENTION_HEADER]: '30', [INBOX_RETENTION_HEADER]: '31' });
    expect(OUTBOX_RETENTION_HEADER).toBe('craig-outbox-retention-days');
    expect(producerWindowsOf(retentionHeaders({ outboxDays: 0, inboxDays: 400 }))).toEqual({ outboxDays: 0, inboxDays: 400 });
  });

  it('reads missing and malformed headers as such, never as a window', () => {
    expect(producerWindowsOf({})).toBe('missing');
    expect(producerWindowsOf({ [INBOX_RETENTION_HEADER]: '31' })).toBe('missing');
    for (const raw of ['', '30d', '-1', '1.5', '99999']) expect(producerWindowsOf({ [OUTBOX_RETENTION_HEADER]: raw })).toBe('malformed');
    expect(producerWindowsOf({ [OUTBOX_RETENTION_HEADER]: '30', [INBOX_RETENTION_HEADER]: 'x' })).toBe('malformed');
    expect(producerWindowsOf({ [OUTBOX_RETENTION_HEADER]: '30' })).toEqual({ outboxDays: 30, inboxDays: undefined });
  });

  it('a replay reaches back the outbox window, or the inbox window - 1 with the outbox sweep off, or without limit', () => {
    expect(replayWindowDays({ outboxDays: 30, inboxDays: 31 })).toBe(30);
    expect(replayWindowDays({ outboxDays: 30 })).toBe(30);
    expect(replayWindowDays({ outboxDays: 40, inboxDays: 31 })).toBe(30);
    expect(replayWindowDays({ outboxDays: 0, inboxDays: 31 })).toBe(30);
    expect(replayWindowDays({ outboxDays: 0, inboxDays: 0 })).toBeNull();
    expect(replayWindowDays({ outboxDays: 0 })).toBeNull();
  });

  it('needs consumer inbox ≥ producer outbox + 1 (a one-day margin)', () => {
    expect(compareDedupHorizon({ outboxDays: 30, inboxDays: 31 }, 31)).toEqual({ ok: true, replayDays: 30, marginDays: 1 });
    expect(compareDedupHorizon({ outboxDays: 30, inboxDays: 31 }, 30)).toEqual({ ok: false, replayDays: 30, marginDays: 0 });
    expect(compareDedupHorizon({ outboxDays: 60, inboxDays: 61 }, 31)).toEqual({ ok: false, replayDays: 60, marginDays: -29 });
    // The producer's outbox sweep off: its own inbox window bounds its replays.
    expect(compareDedupHorizon({ outboxDays: 0, inboxDays: 365 }, 31)).toMatchObject({ ok: false, replayDays: 364 });
    expect(compareDedupHorizon({ outboxDays: 0, inboxDays: 20 }, 31)).toMatchObject({ ok: true, marginDays: 12 });
    // A consumer that never prunes its dedup records is safe from anyone; one that does is not safe from a producer without a limit.
    expect(compareDedupHorizon({ outboxDays: 0, inboxDays: 0 }, 0)).toEqual({ ok: true, replayDays: null, marginDays: Infinity });
    expect(compareDedupHorizon({ outboxDays: 0, inboxDays: 0 }, 3650)).toEqual({ ok: false, replayDays: null, marginDays: -Infinity });
  });

  it('names a service variable the way @craig/settings reads it', () => {
    expect(serviceVariable('placements', 'EVENT_INBOX_RETENTION_DAYS')).toBe('CRAIG_PLACEMENTS__EVENT_INBOX_RETENTION_DAYS');
    expect(serviceVariable('my-svc', 'X')).toBe('CRAIG_MY_SVC__X');
  });
});

describe('cadencePhase', () => {
  it('is the prune jitter, for any seed and span', () => {
    expect(cadencePhase('cases', 3600)).toBe(pruneJitter('cases'));
    expect(cadencePhase('security:archive', 30)).toBe(cadencePhase('security:archive', 30));
    for (const seed of ['a', 'b', 'security:archive']) expect(cadencePhase(seed, 7)).toBeLessThan(7);
    expect(() => cadencePhase('a', 0)).toThrow(RangeError);
  });
});
