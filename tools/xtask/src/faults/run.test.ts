import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scenarioRow, writeDocsTable, type ScenarioReport } from './run.ts';

const report = (over: Partial<ScenarioReport> = {}): ScenarioReport => ({
  name: 'kill-mid-prune',
  summary: 'SIGKILL cases while a prune batch is in flight',
  rounds: 1,
  passed: true,
  lost: 0,
  duplicated: 0,
  recoverMs: 2400,
  roundReports: [{ round: 1, passed: true, ms: 9000, result: { injected: 'SIGKILL | mid batch', expected: 1200, kept: 1200, lost: 0, duplicated: 0, recoverMs: 2400, checks: [{ name: 'rows', ok: true, detail: '1200' }] } }],
  ...over,
});

describe('the faults report', () => {
  it('one row per scenario: injected, expected, kept, lost, duplicated, recovery, verdict (the failed checks named)', () => {
    expect(scenarioRow(report())).toEqual(['kill-mid-prune', 'SIGKILL | mid batch', '1200', '1200', '0', '0', '2.4 s', 'ok']);
    const failed = report({ passed: false, roundReports: [{ round: 1, passed: false, ms: 1, result: { injected: 'x', expected: 3, kept: 2, lost: 1, duplicated: 0, recoverMs: 0, checks: [{ name: 'kept', ok: false, detail: '2, expected 3' }] } }] });
    expect(scenarioRow(failed).at(-1)).toBe('FAILED: kept: 2, expected 3');
    expect(scenarioRow(report({ skipped: 'no rabbitmqctl', roundReports: [] })).at(-1)).toBe('skipped (no rabbitmqctl)');
  });

  it('writes the table between the markers of docs/reliability.md, and only there', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'craig-faults-doc-'));
    try {
      const file = join(dir, 'reliability.md');
      await writeFile(file, 'before\n<!-- faults:begin (last run) -->\nold table\n<!-- faults:end -->\nafter\n');
      await writeDocsTable(file, [report()], { startedAt: '2026-12-03T10:00:00Z', rounds: 1, command: 'pnpm xtask faults' });
      const text = await readFile(file, 'utf8');
      expect(text.startsWith('before\n<!-- faults:begin (last run) -->\n')).toBe(true);
      expect(text.endsWith('<!-- faults:end -->\nafter\n')).toBe(true);
      expect(text).not.toContain('old table');
      expect(text).toContain('| kill-mid-prune | SIGKILL \\| mid batch | 1200 | 1200 | 0 | 0 | 2.4 s | ok |');
      expect(text).toContain('1 of 1 passed, 0 rows or events lost, 0 side effects duplicated');
      await writeFile(file, 'no markers\n');
      await expect(writeDocsTable(file, [report()], { startedAt: 'x', rounds: 1, command: 'c' })).rejects.toThrow(/no faults markers/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
