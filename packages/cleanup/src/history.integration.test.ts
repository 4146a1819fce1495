import { LOCK_KEYS, withDedicatedSession } from '@craig/db';
import { retentionOverrun } from '@craig/mq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendAll, cleanupHarness, seedItems, seedServer, type Harness } from '../test/harness.ts';
import { cleanupRetentionSpecs, sweepCleanupHistory, type HistoryTable } from './history.ts';
import { RUNTIME_ROLE } from './install.ts';
import { cancel, createJob } from './jobs.ts';
import { appendSeen, seal } from './manifest.ts';
import { runToCompletion } from './step.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
});
afterAll(() => h.drop());

async function finishedPrune(items: number, seen: number): Promise<number> {
  const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
  const ids = await seedItems(h.app, serverId, lib!, items);
  const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
  await appendAll(h.app, appendSeen, job.id, ids.slice(0, seen));
  await seal(h.app, job.id, { expectedUniqueCount: seen });
  await runToCompletion(h.app, job.id, { rowBudget: 16 });
  return job.id;
}

const rowsOf = async (jobId: number) => {
  const [r] = await h.admin`
    select (select count(*)::int from cleanup_manifest where job_id = ${jobId}) as manifest,
           (select count(*)::int from cleanup_steps where job_id = ${jobId}) as steps,
           (select count(*)::int from cleanup_jobs where id = ${jobId}) as job`;
  return r as { manifest: number; steps: number; job: number };
};

describe('sweepCleanupHistory', () => {
  it('removes finished jobs past retention, children first in bounded batches; keeps recent and active ones', async () => {
    const old = await finishedPrune(60, 40);
    const recent = await finishedPrune(10, 5);
    const oldCancelled = await (async () => {
      const s = await seedServer(h.app, 1);
      const j = await createJob(h.app, { serverId: s.serverId, libraryId: s.libraryIds[0]!, kind: 'prune-library' });
      await appendSeen(h.app, j.id, ['z']);
      await cancel(h.app, j.id);
      return j.id;
    })();
    const collecting = await (async () => {
      const s = await seedServer(h.app, 1);
      const j = await createJob(h.app, { serverId: s.serverId, libraryId: s.libraryIds[0]!, kind: 'prune-library' });
      await appendSeen(h.app, j.id, ['a', 'b']);
      return j.id;
    })();
    const removing = (await createJob(h.app, { serverId: (await seedServer(h.app, 1)).serverId, kind: 'remove-server' })).id;
    // Age them with explicit past timestamps; the unfinished ones are old too, and stay.
    await h.admin`update cleanup_jobs set created_at = now() - interval '40 days', finished_at = now() - interval '30 days' where id in (${old}, ${oldCancelled})`;
    await h.admin`update cleanup_jobs set created_at = now() - interval '40 days' where id in (${collecting}, ${removing})`;
    expect(await rowsOf(old)).toMatchObject({ manifest: 40, job: 1 });
    // Red: two finished jobs are past 14 days + 48 h grace; the old unfinished ones never count.
    const [invariant] = cleanupRetentionSpecs(14);
    expect(await retentionOverrun(h.admin, invariant!)).toMatchObject({ name: 'cleanup_history_retention_overrun', ok: false, overdueRows: 2 });

    const batches: Array<[HistoryTable, number]> = [];
    const result = await sweepCleanupHistory(h.db.url, { service: 'test', role: RUNTIME_ROLE, retentionDays: 14, batchSize: 16, onBatch: (t, b) => batches.push([t, b.deleted]) });
    expect(result.skipped).toBe(false);
    const oldSteps = batches.filter(([t]) => t === 'cleanup_steps').reduce((n, [, d]) => n + d, 0);
    expect(result.deleted).toEqual({ cleanup_manifest: 41, cleanup_steps: oldSteps, cleanup_jobs: 2 });
    expect(batches.filter(([t]) => t === 'cleanup_manifest').map(([, d]) => d)).toEqual([16, 16, 9]);
    expect(await rowsOf(old)).toEqual({ manifest: 0, steps: 0, job: 0 });
    expect(await rowsOf(oldCancelled)).toEqual({ manifest: 0, steps: 0, job: 0 });
    expect((await rowsOf(recent)).job).toBe(1);
    expect((await rowsOf(recent)).manifest).toBe(5);
    expect(await rowsOf(collecting)).toEqual({ manifest: 2, steps: 0, job: 1 });
    expect((await rowsOf(removing)).job).toBe(1);
    expect(await retentionOverrun(h.admin, invariant!)).toMatchObject({ ok: true, overdueRows: 0 });
  });

  it('one sweeper per database: a second one skips while the lock is held', async () => {
    await withDedicatedSession(
      h.db.url,
      async (session) => {
        expect(await session.tryAdvisoryLock(LOCK_KEYS.cleanupHistorySweep)).toBe(true);
        const skipped = await sweepCleanupHistory(h.db.url, { service: 'test', role: RUNTIME_ROLE, retentionDays: 14 });
        expect(skipped).toEqual({ skipped: true, deleted: { cleanup_manifest: 0, cleanup_steps: 0, cleanup_jobs: 0 }, capped: false, aborted: false });
      },
      { service: 'holder' },
    );
  });
});
