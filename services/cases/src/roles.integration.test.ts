// Proof by refusal (issue 10, docs/security.md): connected as the cases service's runtime role,
// the way the service itself connects, nothing below is permitted: every statement is refused
// with SQLSTATE 42501 (each runs in a transaction that is rolled back, so one that wrongly
// succeeded changes nothing). On a database whose service logs in as the owner of its tables,
// every one of them succeeds.
import { expectRuntimeRefusals, PLATFORM_REFUSALS, runtimeIdentity, schemaRefusals } from '@craig/service-testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { casesHarness, type CasesHarness } from '../test/harness.ts';

let h: CasesHarness;
beforeAll(async () => {
  h = await casesHarness();
});
afterAll(() => h.drop());

describe('the cases runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: cases are opened and closed, never rewritten or deleted', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['cases', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from cases',
      `update cases set subject = 'rewritten'`,
      'update cases set opened_at = now()',
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_cases_app, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_cases_app', superuser: false, owns: 0 });
  });
});
