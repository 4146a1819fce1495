import { describe, expect, it } from 'vitest';
import { AUDIT_LOG_SPEC, DEAD_LETTER_AUDIT_SPEC, SECURITY_ARCHIVE_SPECS } from './archive-specs.ts';
import { InvalidQueryError } from './errors.ts';
import { parseAuditQuery, parseLimit } from './routes.ts';

describe('parseAuditQuery', () => {
  it('accepts the documented forms', () => {
    expect(parseAuditQuery({})).toEqual({ limit: 100 });
    expect(parseAuditQuery({ eventType: 'case.opened', since: '2026-01-31', limit: '500' })).toEqual({ eventType: 'case.opened', since: new Date('2026-01-31T00:00:00Z'), limit: 500 });
    expect(parseAuditQuery({ since: '2026-01-31T12:00:00.123456+02:00' }).since).toEqual(new Date('2026-01-31T10:00:00.123Z'));
  });

  it('names the parameter and the value it refuses', () => {
    const refusal = (query: Record<string, unknown>) => {
      try {
        parseAuditQuery(query);
      } catch (error) {
        return error;
      }
      throw new Error('expected a refusal');
    };
    expect(refusal({ since: '1700000000' })).toMatchObject({ code: 'invalid_request', parameter: 'since', value: '1700000000' });
    expect(refusal({ eventType: 'a'.repeat(256) })).toMatchObject({ parameter: 'eventType' });
    expect(refusal({ eventType: '#' })).toBeInstanceOf(InvalidQueryError);
    expect(() => parseLimit({ limit: '1e2' })).toThrow('query parameter limit="1e2" must be a whole number from 1 to 500');
  });
});

describe('the archive wiring', () => {
  it('archives both tables by received_at, insert-only, with nothing mutable', () => {
    expect(SECURITY_ARCHIVE_SPECS).toEqual([AUDIT_LOG_SPEC, DEAD_LETTER_AUDIT_SPEC]);
    for (const spec of SECURITY_ARCHIVE_SPECS) {
      expect(spec).toMatchObject({ keyColumn: 'id', timestampColumn: 'received_at', fixpoint: { kind: 'insert_only' }, guards: [], mutableColumns: [] });
    }
  });
});
