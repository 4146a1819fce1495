// kill -9 mid cleanup step: the inventory service is SIGKILLed while its runner's step of a
// sealed prune job is in flight. The step is held in flight from outside: a session of the
// scenario's own locks one candidate item of the sixth step, so that step's compare-and-delete
// waits on it with its other candidates already deleted (uncommitted). The runner steps in
// windows (several steps per transaction, ADR-064), so steps before the sixth may be in the
// killed window too. Then: exactly the committed steps' rows are gone (whole steps, the oldest
// unseen first; nothing of the killed window), the restarted service's runner resumes the job
// from a new connection at the next step, deleted + kept + moved + already absent + retained equals the items
// the job covered, kept equals the manifest, and replaying the last step deletes nothing.
import { RUNTIME_ROLE, step, STEP_ROW_BUDGET } from '@craig/cleanup';
import { createClient } from '@craig/db';
import { count, waitingOnLock } from '../probes.ts';
import { Outcome, type FaultScenario } from '../scenario.ts';
import { waitFor } from '../wait.ts';

const ITEMS = 3_000;
/** Every other item is seen by the sync: the other half is pruned, 128 per step. */
const SEEN = ITEMS / 2;
/** Unseen candidates of the held step: steps 1–5 delete 640 rows, step 6 reaches this one. */
const HELD_UNSEEN_INDEX = 5 * STEP_ROW_BUDGET + 60;

interface Job {
  readonly id: number;
  readonly state: string;
  readonly stepsDone: number;
  readonly manifestCount: number;
  readonly counts: { readonly kept: number; readonly deleted: number; readonly moved: number; readonly alreadyAbsent: number; readonly retained: number };
}

export const killMidCleanupStep: FaultScenario = {
  name: 'kill-mid-cleanup-step',
  summary: 'SIGKILL inventory while a cleanup step is in flight',
  fast: true,
  async run(ctx) {
    const out = new Outcome('SIGKILL during cleanup step 6 (held on a row lock; steps in windows)');
    const stack = await ctx.stack({ transport: 'postgres' });
    const inventory = await stack.start('inventory');
    const sql = stack.sql('inventory');

    // A sync as a provider integration does it, through the HTTP API.
    const { server } = await inventory.call<{ server: { id: number } }>('POST', '/v1/servers', { externalId: 'faults-server', name: 'faults' });
    const { library } = await inventory.call<{ library: { id: number } }>('POST', `/v1/servers/${server.id}/libraries`, { externalId: 'faults-library', name: 'faults' });
    const ids = Array.from({ length: ITEMS }, (_, i) => `item-${String(i).padStart(5, '0')}`);
    for (let i = 0; i < ids.length; i += 500) await inventory.call('PUT', `/v1/libraries/${library.id}/items`, { items: ids.slice(i, i + 500).map((externalId) => ({ externalId })) });
    const seen = ids.filter((_, i) => i % 2 === 0);
    const { job } = await inventory.call<{ job: Job }>('POST', `/v1/libraries/${library.id}/syncs`);
    for (let i = 0; i < seen.length; i += 128) await inventory.call('POST', `/v1/jobs/${job.id}/seen`, { externalIds: seen.slice(i, i + 128) });

    // Items were inserted in external-id order, so their ids walk the list in the same order.
    const unseen = ids.filter((_, i) => i % 2 === 1);
    const [held] = await sql<{ id: string }[]>`select id::text from items where library_id = ${library.id} and external_id = ${unseen[HELD_UNSEEN_INDEX]!}`;
    const holder = await sql.reserve();
    ctx.defer(() => holder.release());
    await holder`begin`;
    await holder`select 1 from items where id = ${held!.id} for update`;

    // Sealed: admission closes and the runner starts stepping.
    await inventory.call('POST', `/v1/jobs/${job.id}/seal`, { expectedUniqueCount: SEEN });
    await waitFor('a cleanup step waiting on the held item', async () => (await waitingOnLock(sql, 'inventory:cleanup')).length > 0, { timeoutMs: 60_000, intervalMs: 20 });
    const killedAt = performance.now();
    inventory.kill('SIGKILL');
    await waitFor('the killed step\'s backend to end', async () => (await waitingOnLock(sql, 'inventory:cleanup')).length === 0, { timeoutMs: 30_000, intervalMs: 50 });

    const [atKill] = await sql<{ steps_done: number; deleted: number }[]>`select steps_done, deleted::int as deleted from cleanup_jobs where id = ${job.id}`;
    // Steps 1–5 committed in earlier windows or rolled back with the killed one; step 6 never.
    out.atMost('steps committed before the kill (the held sixth never)', atKill!.steps_done, 5, '');
    const committed = atKill!.steps_done * STEP_ROW_BUDGET;
    out.equal('items deleted before the kill (whole committed steps only)', ITEMS - (await count(sql, 'items')), committed);
    out.equal('job counter agrees', atKill!.deleted, committed);
    // Whole steps in order: the deleted items are exactly the first unseen ones.
    out.equal('the deleted items are the oldest unseen ones', await count(sql, 'items', `external_id in (${unseen.slice(0, committed).map((s) => `'${s}'`).join(',') || "''"})`), 0);
    await holder`commit`;

    await inventory.up();
    const done = await waitFor('the restarted runner to complete the job', async () => {
      const { job: now } = await inventory.call<{ job: Job }>('GET', `/v1/jobs/${job.id}`);
      return now.state === 'completed' ? now : undefined;
    }, { timeoutMs: 120_000, intervalMs: 250 });
    out.recoverMs = performance.now() - killedAt;
    const c = done.counts;
    const left = await count(sql, 'items');
    out.equal('items left (exactly the seen ones)', left, SEEN);
    out.equal('seen items all kept', await count(sql, 'items', `external_id in (${seen.map((s) => `'${s}'`).join(',')})`), SEEN);
    out.equal('deleted + kept + moved + already absent + retained = items the job covered', c.deleted + c.kept + c.moved + c.alreadyAbsent + c.retained, ITEMS);
    out.equal('kept = the manifest', c.kept, done.manifestCount);
    out.equal('deleted', c.deleted, ITEMS - SEEN);

    // Replaying the last completed step (as the runtime role, from yet another connection).
    const runtime = createClient(stack.databaseUrl('inventory'), { service: 'faults:replay', max: 1, role: RUNTIME_ROLE });
    try {
      const replay = await step(runtime, job.id, done.stepsDone);
      out.equal('replaying the last step: replayed', replay.replayed, true);
      out.equal('replaying the last step: items it deleted now', ITEMS - SEEN - (ITEMS - (await count(sql, 'items'))), 0);
    } finally {
      await runtime.end({ timeout: 5 });
    }
    out.equal('restarts by the supervisor', inventory.supervisor.restarts, 1);

    out.expected = SEEN;
    out.kept = await count(sql, 'items');
    out.lost = out.expected - out.kept;
    return out.result();
  },
};
