import { describe, expect, it } from 'vitest';
import { decodeEnvelope, encodeEnvelope, payloadJson } from './envelope.ts';
import { InvalidEventError } from './errors.ts';

const row = {
  eventId: '5f0c3a1e-8a53-4c8e-9d3b-2b7f0f1c9a10',
  eventType: 'case.opened',
  aggregateType: 'case',
  aggregateId: 'c-1 "quoted"',
  source: 'cases',
  occurredAt: '2026-12-02T10:00:00.000Z',
  headersJson: '{"tenant": "t-1"}',
  payloadJson: '{"n": 1, "s": "\\u00e9\\n"}',
};

describe('envelope', () => {
  it('round-trips: the payload and headers are spliced in as jsonb text and come back as values', () => {
    const decoded = decodeEnvelope(encodeEnvelope(row));
    expect(decoded).toEqual({
      eventId: row.eventId,
      eventType: 'case.opened',
      aggregateType: 'case',
      aggregateId: 'c-1 "quoted"',
      source: 'cases',
      occurredAt: row.occurredAt,
      headers: { tenant: 't-1' },
      payload: { n: 1, s: 'é\n' },
    });
  });

  it('refuses bodies that are not envelopes, naming the field', () => {
    expect(() => decodeEnvelope('not json')).toThrow(InvalidEventError);
    expect(() => decodeEnvelope('[]')).toThrow(/envelope object/);
    expect(() => decodeEnvelope(encodeEnvelope({ ...row, eventId: 'x' }))).toThrow(/eventId/);
    expect(() => decodeEnvelope(encodeEnvelope({ ...row, occurredAt: 'soon' }))).toThrow(/occurredAt/);
    expect(() => decodeEnvelope(encodeEnvelope({ ...row, headersJson: '{"a": 1}' }))).toThrow(/headers\.a/);
    const noPayload = JSON.parse(encodeEnvelope(row)) as Record<string, unknown>;
    delete noPayload.payload;
    expect(() => decodeEnvelope(JSON.stringify(noPayload))).toThrow(/payload/);
  });

  it('payloadJson refuses what jsonb cannot hold', () => {
    expect(payloadJson({ a: [1, null] })).toBe('{"a":[1,null]}');
    expect(() => payloadJson({ n: 1n })).toThrow(InvalidEventError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => payloadJson(cyclic)).toThrow(/not JSON-serializable/);
    expect(() => payloadJson('\u0000')).toThrow(/NUL/);
    expect(() => payloadJson(() => 1)).toThrow(/JSON value/);
  });
});
