// kill -9 mid-prune: the cases service is SIGKILLed while a transport prune batch is in flight.
// The batch is held in flight from outside: a session of the scenario's own locks one outbox
// row past the first batch, so the batch that reaches it waits on it (the ones before have
// committed; batches adapt their size from 5,000 rows, ADR-064, so which batch is the held one
// depends on the machine). Then: the advisory lock must be free again within the server's
// client check interval, exactly the committed batches are gone (at least the first whole
// 5,000, a prefix by created_at, none of the in-flight batch), no pending row was ever deleted, and the restarted
// service's next cycle prunes the rest, outbox before inbox, to the row.
import { LOCK_KEYS } from '@craig/db';
import { PRUNE_BATCH } from '@craig/mq';
import { advisoryHolders, auditDeletes, count, waitingOnLock } from '../probes.ts';
import { Outcome, type FaultScenario } from '../scenario.ts';
import { waitFor } from '../wait.ts';

const AGED_PUBLISHED = 30_000;
const AGED_PENDING = 300;
const PARKED = 500;
const FRESH = 500;
const INBOX_AGED = 10_000;
const INBOX_FRESH = 200;
/** The held row: past the first batch (5,000 rows), in the third at fixed batch sizes. */
const HELD_ORDINAL = 2 * PRUNE_BATCH + PRUNE_BATCH / 2;

export const killMidPrune: FaultScenario = {
  name: 'kill-mid-prune',
  summary: 'SIGKILL cases while a transport prune batch is in flight',
  fast: true,
  async run(ctx) {
    const out = new Outcome('SIGKILL during a prune batch past the first (held on a row lock)');
    const stack = await ctx.stack({ transport: 'postgres' });
    const settings = { EVENT_PRUNE_EVERY_TICKS: '2' };
    await stack.migrate('cases', await stack.env('cases', settings));
    const sql = stack.sql('cases');
    // Aged pending rows are the oldest: the drain publishes them first, then they are eligible.
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{"subject":"aged pending"}', now() - interval '41 days' + g * interval '1 ms'
      from generate_series(1, ${AGED_PENDING}) g`;
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{"subject":"aged"}', t, t + interval '1 s'
      from (select now() - interval '40 days' + g * interval '10 ms' as t from generate_series(1, ${AGED_PUBLISHED}) g) x`;
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, parked_at, parked_reason, attempts)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{"subject":"parked"}', now() - interval '45 days', now(), 'max_attempts', 10
      from generate_series(1, ${PARKED}) g`;
    await sql`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
      select gen_random_uuid(), 'case', gen_random_uuid()::text, 'case.opened', '{"subject":"fresh"}', now() - interval '1 day', now() - interval '1 day' + interval '1 s'
      from generate_series(1, ${FRESH}) g`;
    await sql`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'faults.peer', gen_random_uuid(), 'peer.event', now() - case when g <= ${INBOX_AGED} then interval '40 days' else interval '1 day' end
      from generate_series(1, ${INBOX_AGED + INBOX_FRESH}) g`;
    await auditDeletes(sql, 'event_outbox', ['id', 'published_at', 'parked_at', 'created_at']);
    await auditDeletes(sql, 'event_inbox', ['consumer', 'event_id', 'received_at']);
    const [held] = await sql<{ id: string }[]>`
      select id::text from event_outbox where parked_at is null and created_at < now() - interval '30 days'
      order by created_at offset ${HELD_ORDINAL - 1} limit 1`;

    // Hold the row: the batch that reaches it waits (lock_timeout 5 s) with its first rows deleted.
    const holder = await sql.reserve();
    ctx.defer(() => holder.release());
    await holder`begin`;
    await holder`select 1 from event_outbox where id = ${held!.id} for update`;

    const cases = await stack.start('cases', settings);
    const waiting = await waitFor('a prune batch waiting on the held row', async () => (await waitingOnLock(sql, 'cases:prune')).length > 0, { timeoutMs: 60_000, intervalMs: 25 });
    out.check('a prune batch in flight at the kill', waiting, 'cases:prune waits on the held row');
    const killedAt = performance.now();
    cases.kill('SIGKILL');

    // The server notices the dead client within client_connection_check_interval (1 s).
    await waitFor('the prune lock to be free', async () => (await advisoryHolders(sql, LOCK_KEYS.transportPrune)) === 0, { timeoutMs: 30_000, intervalMs: 50 });
    const lockFreeMs = performance.now() - killedAt;
    out.atMost('advisory lock free after the kill', Math.round(lockFreeMs), 5_000, ' ms');
    const deletedAtKill = await count(sql, 'fault_deleted_event_outbox');
    out.check('outbox rows deleted by the killed cycle: at least the first whole batch, none of the held one', deletedAtKill >= PRUNE_BATCH && deletedAtKill < HELD_ORDINAL, `${deletedAtKill} (between ${PRUNE_BATCH} and ${HELD_ORDINAL - 1})`);
    // Whole batches in created_at order: no eligible row older than the newest deleted one survives.
    out.equal(
      'the deleted rows are the oldest eligible ones (whole batches, a prefix)',
      await count(sql, 'event_outbox', `published_at is not null and parked_at is null and created_at < (select max(created_at) from fault_deleted_event_outbox)`),
      0,
    );
    out.equal('inbox untouched (outbox first, the cycle died before it)', await count(sql, 'event_inbox'), INBOX_AGED + INBOX_FRESH);
    await holder`commit`;

    // The supervisor restarts it; its next cycle prunes the rest.
    await cases.up();
    await waitFor(
      'the restarted service to prune the rest',
      async () => (await count(sql, 'event_outbox', `published_at is not null and created_at < now() - interval '30 days'`)) === 0 && (await count(sql, 'event_inbox', `received_at < now() - interval '31 days'`)) === 0,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    out.recoverMs = performance.now() - killedAt;
    out.equal('restarts by the supervisor', cases.supervisor.restarts, 1);

    const deletedPending = await count(sql, 'fault_deleted_event_outbox', 'published_at is null');
    const deleted = await count(sql, 'fault_deleted_event_outbox');
    const distinct = await count(sql, '(select distinct id from fault_deleted_event_outbox) d');
    out.equal('outbox rows deleted in all', deleted, AGED_PUBLISHED + AGED_PENDING);
    out.equal('outbox rows deleted twice', deleted - distinct, 0);
    out.equal('inbox rows deleted', await count(sql, 'fault_deleted_event_inbox'), INBOX_AGED);
    const parked = await count(sql, 'event_outbox', 'parked_at is not null');
    const fresh = await count(sql, 'event_outbox', `created_at > now() - interval '2 days'`);
    const inboxFresh = await count(sql, 'event_inbox');
    out.equal('parked rows kept', parked, PARKED);
    out.equal('fresh rows kept', fresh, FRESH);
    out.equal('fresh inbox rows kept', inboxFresh, INBOX_FRESH);
    out.equal('the aged pending rows were published before they were pruned', await count(sql, 'fault_deleted_event_outbox', `published_at is not null and created_at < now() - interval '41 days' + interval '1 s'`), AGED_PENDING);
    out.expected = PARKED + FRESH + INBOX_FRESH;
    out.kept = parked + fresh + inboxFresh;
    out.lost = deletedPending + (out.expected - out.kept);
    return out.result();
  },
};
