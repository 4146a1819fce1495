// Proof by refusal (issue 10, docs/security.md): connected as the inventory service's runtime role,
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

describe('the inventory runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: inventory rows are deleted only by a cleanup step, identity and step records never change', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['items', 'libraries', 'servers', 'item_classifications', 'cleanup_jobs', 'cleanup_manifest', 'cleanup_steps', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from items',
      'delete from libraries',
      'delete from servers',
      'delete from item_classifications',
      `update items set external_id = 'forged'`,
      'update items set server_id = 1',
      'update cleanup_jobs set steps_done = 0, deleted = 0',
      `insert into cleanup_steps (job_id, step_no, phase, pass, visited, kept, deleted, moved, already_absent, retained, libraries_removed, servers_removed, cursor_item_id, state_after, phase_after) values (1, 1, 'items', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'deleting', 'items')`,
      'alter function cleanup_step(bigint, integer, integer, integer) security invoker',
      'alter function items_admit() owner to current_user',
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_inventory_runtime, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_inventory_runtime', superuser: false, owns: 0 });
  });
});
