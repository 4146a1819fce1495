// Proof by refusal (issue 10, docs/security.md): connected as the financial service's runtime role,
// the way the service itself connects, nothing below is permitted: every statement is refused
// with SQLSTATE 42501 (each runs in a transaction that is rolled back, so one that wrongly
// succeeded changes nothing). On a database whose service logs in as the owner of its tables,
// every one of them succeeds.
import { expectRuntimeRefusals, PLATFORM_REFUSALS, runtimeIdentity, schemaRefusals } from '@craig/service-testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness();
});
afterAll(() => h.drop());

describe('the financial runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: imports are never deleted or rewritten, queue rows keep their identity', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['subsidy_imports', 'subsidy_import_lines', 'subsidy_reconcile_queue', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from subsidy_imports',
      'delete from subsidy_import_lines',
      'update subsidy_import_lines set amount = 0',
      'update subsidy_reconcile_queue set event_id = gen_random_uuid()',
      `update subsidy_imports set source = 'forged'`,
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_financial_app, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_financial_app', superuser: false, owns: 0 });
  });
});
