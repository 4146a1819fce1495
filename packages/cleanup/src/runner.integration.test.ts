import { ensureRuntimeRole, LOCK_KEYS, withDedicatedSession } from '@craig/db';
import { eventually } from '@craig/testkit';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admissionOf, appendAll, cleanupHarness, itemsIn, seedItems, seedServer, type Harness } from '../test/harness.ts';
import { RUNTIME_ROLE } from './install.ts';
import { createJob, status } from './jobs.ts';
import { appendSeen, seal } from './manifest.ts';
import { createCleanupRunner } from './runner.ts';

let h: Harness;
beforeAll(async () => {
  h = await cleanupHarness();
});
afterAll(() => h.drop());

describe('createCleanupRunner', () => {
  it('steps every deleting job to completion, cancels expired collecting jobs and reports metrics', async () => {
    const a = await seedServer(h.app, 1);
    const items = await seedItems(h.app, a.serverId, a.libraryIds[0]!, 300);
    const prune = await createJob(h.app, { serverId: a.serverId, libraryId: a.libraryIds[0]!, kind: 'prune-library' });
    await appendAll(h.app, appendSeen, prune.id, items.slice(0, 100));
    await seal(h.app, prune.id, { expectedUniqueCount: 100 });
    const b = await seedServer(h.app, 2);
    await seedItems(h.app, b.serverId, b.libraryIds[1]!, 50);
    const removal = await createJob(h.app, { serverId: b.serverId, kind: 'remove-server' });
    const c = await seedServer(h.app, 1);
    const abandoned = await createJob(h.app, { serverId: c.serverId, libraryId: c.libraryIds[0]!, kind: 'prune-library' });
    await h.admin`update cleanup_jobs set collect_deadline_at = now() - interval '1 minute' where id = ${abandoned.id}`;

    const registry = new Registry();
    const runner = createCleanupRunner({ url: h.db.url, sql: h.app, service: 'test', role: RUNTIME_ROLE, historyRetentionDays: 14, registry, idleMs: 20, historyEveryMs: 1 });
    runner.start();
    try {
      await eventually(async () => {
        expect((await status(h.app, prune.id)).state).toBe('completed');
        expect((await status(h.app, removal.id)).state).toBe('completed');
      });
    } finally {
      await runner.stop();
    }
    expect(await itemsIn(h.admin, a.libraryIds[0]!)).toHaveLength(100);
    expect(await admissionOf(h.admin, a.libraryIds[0]!)).toBe('open');
    expect((await h.admin`select count(*)::int as n from servers where id = ${b.serverId}`)[0]!.n).toBe(0);
    expect(await status(h.app, abandoned.id)).toMatchObject({ state: 'cancelled', cancelReason: 'deadline' });
    const metrics = await registry.metrics();
    expect(metrics).toContain('cleanup_rows_total{outcome="deleted"} 250');
    expect(metrics).toMatch(/cleanup_jobs_finished_total\{kind="remove-server",state="completed"\} 1/);
    expect(metrics).toMatch(/cleanup_step_seconds_count\{phase="items"\} \d+/);
  });

  it("compresses its steps' full-page images on its session when its role may (ADR-069); walCompression: false leaves the server's setting", async () => {
    // What every boot of the service does: the role may SET wal_compression (cluster-wide, race-safe).
    expect((await ensureRuntimeRole(h.admin, { role: RUNTIME_ROLE })).parameters[0]).toMatchObject({ parameter: 'wal_compression', status: expect.stringMatching(/^(granted|held)$/) });
    const runJob = async (walCompression?: false) => {
      const s = await seedServer(h.app, 1);
      const items = await seedItems(h.app, s.serverId, s.libraryIds[0]!, 40);
      const job = await createJob(h.app, { serverId: s.serverId, libraryId: s.libraryIds[0]!, kind: 'prune-library' });
      await appendAll(h.app, appendSeen, job.id, items.slice(0, 10));
      await seal(h.app, job.id, { expectedUniqueCount: 10 });
      const runner = createCleanupRunner({ url: h.db.url, service: 'test', role: RUNTIME_ROLE, historyRetentionDays: 14, ...(walCompression === false ? { walCompression } : {}) });
      const report = await runner.runCycle();
      expect(await status(h.app, job.id)).toMatchObject({ state: 'completed' });
      expect(await itemsIn(h.admin, s.libraryIds[0]!)).toHaveLength(10);
      return report;
    };
    expect(await runJob()).toMatchObject({ skipped: false, walCompression: 'lz4', counts: { deleted: 30 } });
    expect(await runJob(false)).toMatchObject({ skipped: false, walCompression: 'off', counts: { deleted: 30 } });
  });

  it('one runner per database: a cycle skips while another holds the runner lock', async () => {
    const runner = createCleanupRunner({ url: h.db.url, service: 'test', role: RUNTIME_ROLE, historyRetentionDays: 14 });
    await withDedicatedSession(
      h.db.url,
      async (session) => {
        expect(await session.tryAdvisoryLock(LOCK_KEYS.cleanupCoordinator)).toBe(true);
        expect(await runner.runCycle()).toMatchObject({ skipped: true, steps: 0 });
      },
      { service: 'other-replica' },
    );
    expect(await runner.runCycle()).toMatchObject({ skipped: false });
  });

  it('with a pool, an idle runner does not even open a session: it never contends for the runner lock', async () => {
    const runner = createCleanupRunner({ url: h.db.url, sql: h.app, service: 'test', role: RUNTIME_ROLE, historyRetentionDays: 14 });
    await h.admin`update cleanup_jobs set state = 'cancelled', phase = 'done', cancel_reason = 'requested', finished_at = now() where state in ('collecting', 'deleting')`;
    await withDedicatedSession(
      h.db.url,
      async (session) => {
        expect(await session.tryAdvisoryLock(LOCK_KEYS.cleanupCoordinator)).toBe(true);
        // Had it opened a session it would have found the lock taken and reported skipped.
        expect(await runner.runCycle()).toMatchObject({ skipped: false, steps: 0 });
        const { serverId } = await seedServer(h.app, 0);
        await createJob(h.app, { serverId, kind: 'remove-server' });
        expect(await runner.runCycle()).toMatchObject({ skipped: true, steps: 0 });
      },
      { service: 'other-replica' },
    );
  });
  it('exports the active jobs and the oldest deleting step, so a job that stops advancing shows (explicit past step time)', async () => {
    await h.admin`update cleanup_jobs set state = 'cancelled', phase = 'done', cancel_reason = 'requested', finished_at = now() where state in ('collecting', 'deleting')`;
    const registry = new Registry();
    const runner = createCleanupRunner({ url: h.db.url, sql: h.app, service: 'test', role: RUNTIME_ROLE, historyRetentionDays: 14, registry });
    const sample = async (name: string, labels = '') => {
      const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${name}${labels} `));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    };
    const { serverId } = await seedServer(h.app, 0);
    const job = await createJob(h.app, { serverId, kind: 'remove-server' });
    await h.admin`update cleanup_jobs set updated_at = now() - interval '2 hours' where id = ${job.id}`;
    const twoHoursAgo = Date.now() / 1000 - 7200;
    await withDedicatedSession(
      h.db.url,
      async (session) => {
        // Another replica holds the runner lock and makes no progress: the gauges still tell.
        expect(await session.tryAdvisoryLock(LOCK_KEYS.cleanupCoordinator)).toBe(true);
        expect(await runner.runCycle()).toMatchObject({ skipped: true });
      },
      { service: 'stuck-replica' },
    );
    expect(await sample('cleanup_jobs_active', '{state="deleting"}')).toBe(1);
    expect(await sample('cleanup_jobs_active', '{state="collecting"}')).toBe(0);
    expect(Math.abs(await sample('cleanup_deleting_job_last_step_timestamp_seconds') as number - twoHoursAgo)).toBeLessThan(60);

    await eventually(async () => {
      await runner.runCycle();
      expect((await status(h.app, job.id)).state).toBe('completed');
    });
    await runner.runCycle();
    expect(await sample('cleanup_jobs_active', '{state="deleting"}')).toBe(0);
    expect(await sample('cleanup_deleting_job_last_step_timestamp_seconds')).toBe(0);
  });
});
