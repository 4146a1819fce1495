import { describe, expect, it } from 'vitest';
import { archiveKey, archivePrefixOf } from './archive-key.ts';

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
