import { InvalidEventError, type EventEnvelope } from '@craig/mq';
import { describe, expect, it } from 'vitest';
import { EXCHANGE_ARCHIVE_SPECS, HANDOFFS_SPEC, INVALIDATE_REFUSAL, MEMBERS_SPEC, RUNS_SPEC, SCREENING_FRESHNESS_MONTHS } from './archive-specs.ts';
import { parseCaseOpened } from './consumers.ts';
import { parseId, parseSendJobQuery } from './routes.ts';
import { sendJobPruneTarget, sendJobRetentionSpec } from './send-job-sweep.ts';

describe('parseSendJobQuery', () => {
  it('accepts the documented forms and names what it refuses', () => {
    expect(parseSendJobQuery({})).toEqual({ limit: 100 });
    expect(parseSendJobQuery({ status: 'failed', limit: '500' })).toEqual({ status: 'failed', limit: 500 });
    expect(() => parseSendJobQuery({ status: 'SENT' })).toThrow('parameter status="SENT" must be one of queued, sending, sent, failed, cancelled');
    expect(() => parseSendJobQuery({ limit: '1e2' })).toThrow('parameter limit="1e2" must be a whole number from 1 to 500');
    expect(() => parseSendJobQuery({ status: ['sent', 'failed'] })).toThrow('must be given once');
  });

  it('takes ids as positive decimal bigints only', () => {
    expect(parseId('42')).toBe('42');
    for (const bad of ['0', '042', '-1', 'x', '1234567890123456789', undefined]) expect(() => parseId(bad)).toThrow(/parameter id=/);
  });
});

describe('parseCaseOpened', () => {
  const event = (payload: unknown): EventEnvelope => ({ eventId: '00000000-0000-4000-8000-000000000001', eventType: 'case.opened', aggregateType: 'case', aggregateId: 'c-9', source: 'cases', occurredAt: new Date().toISOString(), headers: {}, payload });
  it('defaults the destination and the people, and takes them from the payload', () => {
    expect(parseCaseOpened(event({}))).toEqual({ caseId: 'c-9', destination: 'ssa-gateway', personRefs: ['c-9:child', 'c-9:guardian'] });
    expect(parseCaseOpened(event(null))).toEqual({ caseId: 'c-9', destination: 'ssa-gateway', personRefs: ['c-9:child', 'c-9:guardian'] });
    expect(parseCaseOpened(event({ destination: 'x', personRefs: ['a'] }))).toEqual({ caseId: 'c-9', destination: 'x', personRefs: ['a'] });
  });
  it('refuses a malformed field by name', () => {
    expect(() => parseCaseOpened(event({ personRefs: [] }))).toThrow(InvalidEventError);
    expect(() => parseCaseOpened(event({ personRefs: [1] }))).toThrow(/payload\.personRefs/);
    expect(() => parseCaseOpened(event({ destination: '' }))).toThrow(/payload\.destination/);
  });
});

describe('the retention wiring', () => {
  it('archives handoffs, members, runs in FK order, with the fixpoints of seed 003', () => {
    expect(EXCHANGE_ARCHIVE_SPECS.map((s) => s.table)).toEqual(['ssa_transport_handoffs', 'ssa_screening_members', 'ssa_screening_runs']);
    expect(HANDOFFS_SPEC).toMatchObject({ fixpoint: { kind: 'insert_only' }, guards: [], mutableColumns: [] });
    expect(MEMBERS_SPEC).toMatchObject({ fixpoint: { kind: 'terminal_status', column: 'status', values: ['matched', 'cleared', 'error'] }, guards: [{ table: 'ssa_transport_handoffs', column: 'member_id' }] });
    expect(RUNS_SPEC).toMatchObject({
      fixpoint: { kind: 'terminal_quiescent', column: 'status', values: ['completed'], since: 'as_of', months: SCREENING_FRESHNESS_MONTHS },
      guards: [{ table: 'ssa_screening_members', column: 'run_id' }],
    });
    expect(RUNS_SPEC.mutableColumns).toContainEqual({ column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: INVALIDATE_REFUSAL });
    expect(SCREENING_FRESHNESS_MONTHS).toBe(12);
  });

  it('sweeps send jobs by finished_at and names its invariant', () => {
    expect(sendJobPruneTarget(30)).toMatchObject({ table: 'exchange_send_jobs', orderBy: 'finished_at' });
    expect(sendJobRetentionSpec(30)).toMatchObject({ name: 'exchange_send_jobs_retention_overrun', table: 'exchange_send_jobs', column: 'finished_at', windowDays: 30 });
    expect(() => sendJobRetentionSpec(-1)).toThrow(RangeError);
  });
});
