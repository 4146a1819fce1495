import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

const env = (service: string, url: string) => ({
  [`CRAIG_${service.toUpperCase()}__DATABASE_URL`]: url,
  [`CRAIG_${service.toUpperCase()}__ADMIN_TOKEN`]: 'x'.repeat(32),
  CRAIG__BUS_DATABASE_URL: url,
});

describe('pnpm xtask migrate cases | placements | safety', () => {
  it.each([
    ['cases', 'mq, cases', ['cases']],
    ['placements', 'mq, case_refs, placements', ['case_refs', 'placements']],
    ['safety', 'mq, case_refs, safety', ['case_refs', 'safety_reports']],
  ] as const)('%s applies its sets in order (%s)', async (service, sets, tables) => {
    db = await testDatabase({ prefix: `${service}_t`, max: 1 });
    const out = capture();
    expect(await runXtask(['migrate', service], { env: env(service, db.url), stdout: out })).toBe(0);
    expect(out.text()).toContain(`sets: ${sets}`);
    for (const table of ['event_outbox', ...tables]) {
      const [row] = await db.sql`select to_regclass(${table})::text as t`;
      expect(row!.t).toBe(table);
    }
  });
});
