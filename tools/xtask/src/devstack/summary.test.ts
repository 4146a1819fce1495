import { describe, expect, it } from 'vitest';
import type { Activity } from './activity.ts';
import { summarize, type ServiceOutcome } from './summary.ts';

const activity = (over: Partial<Activity> = {}): Activity => ({
  pruned: new Map([['event_outbox', 10]]),
  published: 3,
  pending: 0,
  parked: 0,
  latched: [],
  archivedRows: new Map(),
  archiveBatches: new Map(),
  cleanupJobs: new Map(),
  cleanupSteps: 0,
  cleanupDeleted: 0,
  ...over,
});

const outcome = (over: Partial<ServiceOutcome> = {}): ServiceOutcome => ({
  name: 'lab',
  statusAtEnd: 'up',
  crashes: [],
  activity: activity(),
  seededThisRun: true,
  seedNote: undefined,
  ...over,
});

describe('the devstack verdict', () => {
  it('passes a seeded service that stayed up and pruned, and an archiver that archived', () => {
    const archiver = outcome({ name: 'arch', archives: true, activity: activity({ archivedRows: new Map([['audit_log', 5]]), archiveBatches: new Map([['archived', 1]]) }) });
    const v = summarize([outcome(), archiver], 50, true);
    expect(v.ok).toBe(true);
    expect(v.lines).toContain('  arch: archived audit_log 5 in 1 batches');
    expect(v.lines.at(-1)).toBe('result: ok');
  });

  it('fails when seeding failed, naming the error, even though nothing else went wrong', () => {
    const v = summarize([outcome({ seededThisRun: false, seedFailed: 'duplicate key value violates unique constraint "x"' })], 50, true);
    expect(v.ok).toBe(false);
    expect(v.reasons).toEqual(['lab: seeding aged history failed (duplicate key value violates unique constraint "x")']);
  });

  it('fails an archiving service seeded in this run that archived nothing, and one that pruned nothing', () => {
    const v = summarize([outcome({ archives: true }), outcome({ name: 'idle', activity: activity({ pruned: new Map() }) })], 50, true);
    expect(v.reasons).toEqual(['lab: no archive cycle archived aged rows', 'idle: no prune cycle deleted aged rows']);
    expect(v.lines.at(-1)).toMatch(/^result: FAILED: /);
  });
});
