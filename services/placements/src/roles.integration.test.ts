// Proof by refusal (issue 10, docs/security.md): connected as the placements service's runtime role,
// the way the service itself connects, nothing below is permitted: every statement is refused
// with SQLSTATE 42501 (each runs in a transaction that is rolled back, so one that wrongly
// succeeded changes nothing). On a database whose service logs in as the owner of its tables,
// every one of them succeeds.
import { expectRuntimeRefusals, PLATFORM_REFUSALS, runtimeIdentity, schemaRefusals } from '@craig/service-testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placementsHarness, type PlacementsHarness } from '../test/harness.ts';

let h: PlacementsHarness;
beforeAll(async () => {
  h = await placementsHarness();
});
afterAll(() => h.drop());

describe('the placements runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: placements are started and ended, case refs only move open → closed', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['placements', 'case_refs', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from placements',
      'delete from case_refs',
      'update placements set case_id = gen_random_uuid()',
      'update case_refs set case_id = gen_random_uuid()',
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_placements_app, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_placements_app', superuser: false, owns: 0 });
  });
});
