// Proof by refusal (issue 10, docs/security.md): connected as the exchange service's runtime role,
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

describe('the exchange runtime role', () => {
  it('may not change the schema, switch a trigger off, truncate, or rewrite what it must not: the SSA tables are deleted from only through the prune gate, the ledger never changes', async () => {
    await expectRuntimeRefusals(h.sql, [
      ...schemaRefusals(['exchange_send_jobs', 'ssa_screening_runs', 'ssa_screening_members', 'ssa_transport_handoffs', 'archive_ledger', 'archive_tables', 'event_outbox', 'event_inbox', 'prune_latch', 'craig_migrations']),
      'delete from ssa_transport_handoffs',
      'delete from ssa_screening_members',
      'delete from ssa_screening_runs',
      `update ssa_transport_handoffs set payload = '{}'::jsonb`,
      `update ssa_screening_runs set as_of = '2000-01-01'`,
      `update ssa_screening_members set person_ref = 'x'`,
      `update exchange_send_jobs set destination = 'elsewhere'`,
      'update archive_ledger set row_count = 1',
      'delete from archive_ledger',
      `insert into archive_ledger (archive_id, table_name, object_key, sha256, bytes, row_count, min_key, max_key, min_ts, max_ts) values (gen_random_uuid(), 'ssa_screening_runs', 'forged', repeat('0', 64), 1, 1, '1', '1', now(), now())`,
      'update archive_tables set hot_window_days = 1',
      'delete from archive_tables',
      'alter function archive_prune_batch(uuid, text, text, text, bigint, integer, text, text, timestamptz, timestamptz, tid[], text[], text[], integer) security invoker',
      ...PLATFORM_REFUSALS,
    ]);
  });

  it('is what the service runs as: craig_exchange_app, owning nothing, no superuser', async () => {
    expect(await runtimeIdentity(h.sql)).toEqual({ role: 'craig_exchange_app', superuser: false, owns: 0 });
  });
});
