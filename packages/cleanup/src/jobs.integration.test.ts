import { createClient } from '@craig/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionOf, appendAll, cleanupHarness, itemsIn, rejection, seedItems, seedServer, type Harness } from '../test/harness.ts';
import { InvalidExternalIds, InvalidJobRequest, JobNotFound, JobStateConflict, ManifestCountMismatch, ServerBusy, TargetNotFound, TooManyIds } from './errors.ts';
import { RUNTIME_ROLE } from './install.ts';
import { cancel, cancelExpiredJobs, createJob, status } from './jobs.ts';
import { appendSeen, seal } from './manifest.ts';
import { step } from './step.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
});
afterAll(() => h.drop());

const manifestOf = async (jobId: number) =>
  (await h.admin<{ external_id: string }[]>`select external_id from cleanup_manifest where job_id = ${jobId} order by external_id`).map((r) => r.external_id);

describe('per-server serialization', () => {
  it('two jobs on one server serialize (collecting ones too); other servers are independent', async () => {
    const a = await seedServer(h.app, 2);
    const b = await seedServer(h.app, 1);
    const first = await createJob(h.app, { serverId: a.serverId, libraryId: a.libraryIds[0]!, kind: 'prune-library' });
    expect(first).toMatchObject({ state: 'collecting', phase: 'collect', kind: 'prune-library', nextStep: 1 });

    for (const second of [
      { serverId: a.serverId, libraryId: a.libraryIds[1]!, kind: 'prune-library' as const },
      { serverId: a.serverId, libraryId: a.libraryIds[0]!, kind: 'remove-library' as const },
      { serverId: a.serverId, kind: 'remove-server' as const },
    ]) {
      const busy = await rejection(createJob(h.app, second));
      expect(busy).toBeInstanceOf(ServerBusy);
      expect(busy).toMatchObject({ code: 'server_busy', serverId: a.serverId, busyJobId: first.id, busyState: 'collecting' });
    }
    // Refused removals closed nothing.
    expect(await admissionOf(h.admin, a.libraryIds[0]!)).toBe('open');

    const other = await createJob(h.app, { serverId: b.serverId, libraryId: b.libraryIds[0]!, kind: 'prune-library' });
    expect(other.state).toBe('collecting');

    await cancel(h.app, first.id);
    const next = await createJob(h.app, { serverId: a.serverId, libraryId: a.libraryIds[1]!, kind: 'prune-library' });
    expect(next.state).toBe('collecting');
    await cancel(h.app, next.id);
    await cancel(h.app, other.id);
  });

  it('concurrent createJob calls on one server from separate connections: exactly one wins', async () => {
    const { serverId, libraryIds } = await seedServer(h.app, 4);
    const clients = libraryIds.map(() => createClient(h.db.url, { service: 'racer', max: 1, role: RUNTIME_ROLE }));
    try {
      const results = await Promise.allSettled(libraryIds.map((libraryId, i) => createJob(clients[i]!, { serverId, libraryId, kind: 'prune-library' })));
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(3);
      for (const l of lost) expect(l.reason).toBeInstanceOf(ServerBusy);
      const [active] = await h.admin`select count(*)::int as n from cleanup_jobs where server_id = ${serverId} and state in ('collecting', 'deleting')`;
      expect(active?.n).toBe(1);
      await cancel(h.app, (won[0] as PromiseFulfilledResult<{ id: number }>).value.id);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });
});

describe('collect deadline', () => {
  it('a collecting job past its deadline no longer blocks its server: createJob cancels it', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const abandoned = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' }, { collectDeadlineMinutes: 30 });
    expect(await rejection(createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' }))).toBeInstanceOf(ServerBusy);
    // An abandoned sync: its deadline is in the past (explicit timestamps, no sleeping).
    await h.admin`update cleanup_jobs set created_at = now() - interval '2 hours', collect_deadline_at = now() - interval '90 minutes' where id = ${abandoned.id}`;
    const fresh = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    expect(fresh.state).toBe('collecting');
    expect(await status(h.app, abandoned.id)).toMatchObject({ state: 'cancelled', cancelReason: 'deadline' });
    await cancel(h.app, fresh.id);
  });

  it('the sweep cancels expired collecting jobs, and appending to or sealing one is refused', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await appendSeen(h.app, job.id, ['a']);
    await h.admin`update cleanup_jobs set collect_deadline_at = now() - interval '1 second' where id = ${job.id}`;
    const refused = await rejection(appendSeen(h.app, job.id, ['b']));
    expect(refused).toBeInstanceOf(JobStateConflict);
    expect(refused).toMatchObject({ state: 'cancelled', operation: 'appendSeen' });
    expect(await manifestOf(job.id)).toEqual(['a']);
    expect(await status(h.app, job.id)).toMatchObject({ state: 'cancelled', cancelReason: 'deadline' });

    const other = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await h.admin`update cleanup_jobs set collect_deadline_at = now() - interval '1 second' where id = ${other.id}`;
    expect(await cancelExpiredJobs(h.app)).toContain(other.id);
    expect(await rejection(seal(h.app, other.id, { expectedUniqueCount: 0 }))).toBeInstanceOf(JobStateConflict);
    expect(await admissionOf(h.admin, lib!)).toBe('open');
  });
});

describe('bad input gets its typed error and changes nothing', () => {
  it('129 ids, malformed ids, a wrong expected count, an unknown job', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const items = await seedItems(h.app, serverId, lib!, 5);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await appendSeen(h.app, job.id, items.slice(0, 2));

    const tooMany = await rejection(appendSeen(h.app, job.id, Array.from({ length: 129 }, (_, i) => `x${i}`)));
    expect(tooMany).toBeInstanceOf(TooManyIds);
    expect(tooMany).toMatchObject({ code: 'too_many_ids', count: 129, max: 128 });
    const malformed = await rejection(appendSeen(h.app, job.id, ['fine-1', 'bad id', '']));
    expect(malformed).toBeInstanceOf(InvalidExternalIds);
    expect((malformed as InvalidExternalIds).invalid.map((i) => i.index)).toEqual([1, 2]);
    expect(await manifestOf(job.id)).toEqual(items.slice(0, 2).sort());

    const mismatch = await rejection(seal(h.app, job.id, { expectedUniqueCount: 3 }));
    expect(mismatch).toBeInstanceOf(ManifestCountMismatch);
    expect(mismatch).toMatchObject({ code: 'manifest_count_mismatch', expected: 3, actual: 2, jobId: job.id });
    expect(await status(h.app, job.id)).toMatchObject({ state: 'collecting', manifestCount: 2, highWaterId: null });
    expect(await admissionOf(h.admin, lib!)).toBe('open');
    expect(await rejection(seal(h.app, job.id, { expectedUniqueCount: -1 }))).toBeInstanceOf(InvalidJobRequest);

    expect(await rejection(appendSeen(h.app, 987_654_321, ['a']))).toBeInstanceOf(JobNotFound);
    expect(await rejection(status(h.app, 987_654_321))).toMatchObject({ code: 'job_not_found', jobId: 987_654_321 });
    expect(await rejection(createJob(h.app, { serverId, kind: 'prune-library' }))).toBeInstanceOf(InvalidJobRequest);
    expect(await rejection(createJob(h.app, { serverId, libraryId: lib!, kind: 'remove-server' }))).toBeInstanceOf(InvalidJobRequest);
    expect(await rejection(createJob(h.app, { serverId, libraryId: lib!, kind: 'purge' as never }))).toBeInstanceOf(InvalidJobRequest);
    expect(await rejection(createJob(h.app, { serverId: 2_000_000_000, kind: 'remove-server' }))).toBeInstanceOf(TargetNotFound);
    expect(await itemsIn(h.admin, lib!)).toEqual(items);
    await cancel(h.app, job.id);
  });

  it('duplicates are idempotent, within a call and across calls', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    expect(await appendSeen(h.app, job.id, ['a', 'b', 'a'])).toEqual({ received: 3, added: 2, duplicates: 1 });
    expect(await appendSeen(h.app, job.id, ['b', 'c'])).toEqual({ received: 2, added: 1, duplicates: 1 });
    expect(await status(h.app, job.id)).toMatchObject({ manifestCount: 3 });
    await seal(h.app, job.id, { expectedUniqueCount: 3 });
  });
});

describe('lifecycle rules', () => {
  it('a partial traversal cannot start deletion: stepping a collecting job is refused and deletes nothing', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const items = await seedItems(h.app, serverId, lib!, 10);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await appendSeen(h.app, job.id, items.slice(0, 3));
    const early = await rejection(step(h.app, job.id, 1));
    expect(early).toBeInstanceOf(JobStateConflict);
    expect(early.message).toContain('partial traversal cannot start deletion');
    // Half a manifest sealed with the full count is refused too.
    expect(await rejection(seal(h.app, job.id, { expectedUniqueCount: 10 }))).toBeInstanceOf(ManifestCountMismatch);
    expect(await rejection(step(h.app, job.id, 1))).toBeInstanceOf(JobStateConflict);
    expect(await itemsIn(h.admin, lib!)).toEqual(items);
    expect(await admissionOf(h.admin, lib!)).toBe('open');
    await cancel(h.app, job.id);
  });

  it('cancel works only while collecting; afterwards the job only goes forward', async () => {
    const { serverId, libraryIds: [lib] } = await seedServer(h.app, 1);
    const items = await seedItems(h.app, serverId, lib!, 2);
    const job = await createJob(h.app, { serverId, libraryId: lib!, kind: 'prune-library' });
    await appendAll(h.app, appendSeen, job.id, items);
    await seal(h.app, job.id, { expectedUniqueCount: 2 });
    const refused = await rejection(cancel(h.app, job.id));
    expect(refused).toBeInstanceOf(JobStateConflict);
    expect(refused).toMatchObject({ state: 'deleting', operation: 'cancel' });
    const removal = await seedServer(h.app, 1);
    const removing = await createJob(h.app, { serverId: removal.serverId, libraryId: removal.libraryIds[0]!, kind: 'remove-library' });
    expect(removing).toMatchObject({ state: 'deleting', phase: 'items' });
    expect(await admissionOf(h.admin, removal.libraryIds[0]!)).toBe('draining');
    expect(await rejection(cancel(h.app, removing.id))).toBeInstanceOf(JobStateConflict);
    expect(await rejection(appendSeen(h.app, removing.id, ['a']))).toBeInstanceOf(JobStateConflict);
  });
});
