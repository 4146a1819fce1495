// Proof by refusal (issue 10, docs/security.md): connected as the safety service's runtime role,
// the way the service itself connects, nothing below is permitted: every statement is refused
// with SQLSTATE 42501 (each runs in a transaction that is rolled back, so one that wrongly
// succeeded changes nothing). On a database whose service logs in as the owner of its tables,
// every one of them succeeds.
import { expectRuntimeRefusals, PLATFORM_REFUSALS, runtimeIdentity, schemaRefusals } from '@craig/service-testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safetyHarness, type SafetyHarness } from '../test/harness.ts';

let h: SafetyHarness;
beforeAll(async () => {
  h = await safetyHarness();
});
afterAll(() => h.drop());

describe('the safety runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: a filed report is never changed or deleted', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['safety_reports', 'case_refs', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from safety_reports',
      `update safety_reports set summary = 'rewritten'`,
      'delete from case_refs',
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_safety_app, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_safety_app', superuser: false, owns: 0 });
  });
});
