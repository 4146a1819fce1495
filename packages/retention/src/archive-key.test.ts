import { describe, expect, it } from 'vitest';
import { isUuidv7, uuidv7, uuidv7Time } from './archive-id.ts';
import { archiveKey, archivePrefixOf } from './archive-key.ts';

describe('archive ids', () => {
  it('are UUIDv7: version 7, RFC variant, the creation millisecond up front', () => {
    const id = uuidv7(1_700_000_000_123, new Uint8Array(10).fill(0xff));
    expect(id).toBe('018bcfe5-687b-7fff-bfff-ffffffffffff');
    expect(isUuidv7(id)).toBe(true);
    expect(uuidv7Time(id)).toBe(1_700_000_000_123);
    expect(isUuidv7('6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(false); // v1
  });

  it('are unique and sort by creation time', () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(1000);
    expect(uuidv7(2_000) > uuidv7(1_000)).toBe(true);
    expect(() => uuidv7(-1)).toThrow(RangeError);
  });
});

describe('archive keys', () => {
  const id = '018bcfe5-687b-7fff-bfff-ffffffffffff';

  it('are <prefix>/<service>/<table>/<yyyy>/<mm>/<archive_id>.ndjson.gz by the oldest row', () => {
    expect(archiveKey({ prefix: 'archive', service: 'security', table: 'audit_log', oldestRow: '2024-03-01 00:00:00.000001+00', archiveId: id })).toBe(
      `archive/security/audit_log/2024/03/${id}.ndjson.gz`,
    );
    expect(archiveKey({ prefix: 'prod/eu', service: 'rules', table: 'rule_evaluations', oldestRow: '1999-12-31 23:59:59+00', archiveId: id })).toBe(
      `prod/eu/rules/rule_evaluations/1999/12/${id}.ndjson.gz`,
    );
  });

  it('file infinite timestamps under 0000/00', () => {
    expect(archiveKey({ prefix: 'archive', service: 's', table: 't', oldestRow: '-infinity', archiveId: id })).toBe(`archive/s/t/0000/00/${id}.ndjson.gz`);
  });

  it('refuse segments that would escape their folder', () => {
    expect(() => archiveKey({ prefix: 'archive/', service: 's', table: 't', oldestRow: '2024-01-01', archiveId: id })).toThrow(/prefix/);
    expect(() => archiveKey({ prefix: 'archive', service: '../x', table: 't', oldestRow: '2024-01-01', archiveId: id })).toThrow(/service/);
    expect(archivePrefixOf('archive', 'security')).toBe('archive/security/');
    expect(archivePrefixOf('archive', 'security', 'audit_log')).toBe('archive/security/audit_log/');
  });
});
