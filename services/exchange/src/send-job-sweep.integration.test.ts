// The terminal-state sweep of exchange_send_jobs: only finished jobs past the window, exact
// counts across batches, one sweeper per database, the cap latch, 0 disables, and the
// invariant that watches it.
import { LOCK_KEYS, withDedicatedSession } from '@craig/db';
import { readPruneLatches, resumePrune, retentionOverrun } from '@craig/mq';
import { eventually } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { counterValue, serviceHarness, type ServiceHarness } from '../test/harness.ts';
import { sendJobRetentionSpec, SendJobSweeper, sweepSendJobs, type SendJobSweepResult } from './send-job-sweep.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness({ prefix: 'exchange_sweep', sendJobs: { initialDelayMs: 0, everyMs: 60_000 } });
});
afterAll(() => h.drop());
beforeEach(async () => {
  await h.db.sql`truncate exchange_send_jobs, prune_latch`;
});

/**
 * 7 finished jobs past the 30-day window (sent, failed, cancelled); 3 finished inside it; live
 * jobs created long ago (never finished, never swept).
 */
async function seed(): Promise<void> {
  await h.db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
    select 'old-' || g, 'ssa-gateway', (array['sent', 'failed', 'cancelled'])[1 + g % 3], 1,
           now() - make_interval(days => 40 + g), now() - make_interval(days => 30 + g, hours => 12)
    from generate_series(1, 7) g`;
  await h.db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at, finished_at)
    select 'recent-' || g, 'ssa-gateway', 'sent', 1, now() - make_interval(days => 40), now() - make_interval(days => 29 - g)
    from generate_series(1, 3) g`;
  await h.db.sql`
    insert into exchange_send_jobs (case_id, destination, status, attempts, created_at)
    values ('live-1', 'ssa-gateway', 'queued', 0, now() - interval '400 days'),
           ('live-2', 'unreachable-partner', 'sending', 2, now() - interval '400 days')`;
}

const left = async () => (await h.db.sql<{ case_id: string }[]>`select case_id from exchange_send_jobs order by case_id`).map((r) => r.case_id);

describe('the send job sweep', () => {
  it('deletes exactly the finished jobs past the window, across batches, counting every row', async () => {
    await seed();
    const registry = new Registry();
    const batches: number[] = [];
    const result = await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30, registry, batchSize: 2, onBatch: (b) => batches.push(b.deleted) });
    expect(result).toMatchObject({ status: 'pruned', deleted: 7, batches: 4 });
    expect(batches).toEqual([2, 2, 2, 1]);
    expect(await left()).toEqual(['live-1', 'live-2', 'recent-1', 'recent-2', 'recent-3']);
    expect(await counterValue(registry, 'event_rows_pruned_total', { table: 'exchange_send_jobs' })).toBe(7);
    expect((await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30, registry })).deleted).toBe(0);
  });

  it('with two sweepers of one database, the one that finds the lock held skips', async () => {
    await seed();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let first!: Promise<SendJobSweepResult>;
    const inBatch = new Promise<void>((entered) => {
      first = sweepSendJobs({
        databaseUrl: h.db.url,
        retentionDays: 30,
        batchSize: 2,
        onBatch: async () => {
          entered();
          await held;
        },
      });
    });
    await inBatch;
    const second = await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30 });
    expect(second).toMatchObject({ status: 'skipped', deleted: 0 });
    release();
    expect(await first).toMatchObject({ status: 'pruned', deleted: 7 });

    // The lock lives on a dedicated session: held elsewhere, the sweep skips too.
    await seed();
    const skipped = await withDedicatedSession(
      h.db.url,
      async (other) => {
        expect(await other.tryAdvisoryLock(LOCK_KEYS.exchangeSendJobSweep)).toBe(true);
        return sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30 });
      },
      { service: 'other-sweeper' },
    );
    expect(skipped.status).toBe('skipped');
    expect((await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30 })).deleted).toBe(7);
  });

  it('stops at the cap and latches until an operator resumes it', async () => {
    await seed();
    const registry = new Registry();
    const capped = await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30, registry, batchSize: 2, cap: 3 });
    expect(capped).toMatchObject({ status: 'capped', deleted: 3, latch: { target: 'exchange_send_jobs', deleted: 3, cap: 3 } });
    expect([...(await readPruneLatches(h.sql)).keys()]).toEqual(['exchange_send_jobs']);
    expect(await counterValue(registry, 'event_prune_cap_latched', { table: 'exchange_send_jobs' })).toBe(1);

    const latched = await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30, registry, batchSize: 2, cap: 3 });
    expect(latched).toMatchObject({ status: 'latched', deleted: 0 });
    expect((await left()).filter((c) => c.startsWith('old-'))).toHaveLength(4);

    expect(await resumePrune(h.sql, 'exchange_send_jobs')).toMatchObject({ deleted: 3 });
    expect(await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30, registry })).toMatchObject({ status: 'pruned', deleted: 4 });
    expect(await counterValue(registry, 'event_prune_cap_latched', { table: 'exchange_send_jobs' })).toBe(0);
  });

  it('0 disables the sweep', async () => {
    await seed();
    expect(await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 0 })).toMatchObject({ status: 'disabled', deleted: 0 });
    expect(await left()).toHaveLength(12);
    expect(await retentionOverrun(h.sql, sendJobRetentionSpec(0))).toMatchObject({ ok: true, overdueRows: 0 });
  });

  it('exchange_send_jobs_retention_overrun is red while finished jobs outlive the window + grace, green after a sweep', async () => {
    await seed();
    const spec = sendJobRetentionSpec(30);
    expect(spec.name).toBe('exchange_send_jobs_retention_overrun');
    // Past 30 days + 48 h: old-2 … old-7 (finished 32.5…37.5 days ago, old-1 30.5); the live ones never count.
    const red = await retentionOverrun(h.sql, spec);
    expect(red).toMatchObject({ ok: false, overdueRows: 6 });
    await sweepSendJobs({ databaseUrl: h.db.url, retentionDays: 30 });
    expect(await retentionOverrun(h.sql, spec)).toMatchObject({ ok: true, overdueRows: 0 });
  });

  it("runs on its own cadence in the service until the signal aborts", async () => {
    await seed();
    const stop = new AbortController();
    const loop = h.service.sendJobSweep.run(stop.signal);
    await eventually(async () => expect(await left()).toHaveLength(5), { timeoutMs: 10_000 });
    expect(await counterValue(h.registry, 'event_rows_pruned_total', { table: 'exchange_send_jobs' })).toBe(7);
    stop.abort();
    await loop;
    // A sweeper with defaults starts at its deterministic phase: well after this test.
    const idle = new SendJobSweeper({ databaseUrl: h.db.url, retentionDays: 30 });
    const idleStop = new AbortController();
    const idleLoop = idle.run(idleStop.signal);
    idleStop.abort();
    await idleLoop;
  });
});
