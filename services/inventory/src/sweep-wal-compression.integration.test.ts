// SWEEP_WAL_COMPRESSION reaches the cleanup runner's session (ADR-069): the service passes the
// setting through, and 'off' leaves the server's own.
import { afterAll, describe, expect, it } from 'vitest';
import { call, serviceHarness, type ServiceHarness } from '../test/harness.ts';

const harnesses: ServiceHarness[] = [];
afterAll(() => Promise.all(harnesses.map((h) => h.drop())));

/** A library of 300 items, a sync that saw 100 of them, sealed: a deleting job for the runner. */
async function deletingJob(h: ServiceHarness): Promise<number> {
  const server = await call(h.app, 'POST', '/v1/servers', { externalId: 'srv-wal', name: 'Plex' });
  const lib = await call(h.app, 'POST', `/v1/servers/${server.body.server.id}/libraries`, { externalId: 'lib-wal', name: 'Movies' });
  const libraryId = lib.body.library.id as number;
  const items = Array.from({ length: 300 }, (_, i) => ({ externalId: `m-${i}`, title: `Title ${i}` }));
  for (let i = 0; i < items.length; i += 100) expect((await call(h.app, 'PUT', `/v1/libraries/${libraryId}/items`, { items: items.slice(i, i + 100) })).status).toBe(200);
  const sync = await call(h.app, 'POST', `/v1/libraries/${libraryId}/syncs`);
  const jobId = sync.body.job.id as number;
  expect((await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: items.slice(0, 100).map((i) => i.externalId) })).status).toBe(200);
  expect((await call(h.app, 'POST', `/v1/jobs/${jobId}/seal`, { expectedUniqueCount: 100 })).body.job).toMatchObject({ state: 'deleting' });
  return jobId;
}

describe('SWEEP_WAL_COMPRESSION in the inventory service', () => {
  it.each([
    ['zstd', 'zstd'],
    ['pglz', 'pglz'],
  ] as const)('%s: the runner steps on a session compressing with %s', async (setting, expected) => {
    const h = await serviceHarness({ sweepWalCompression: setting });
    harnesses.push(h);
    const jobId = await deletingJob(h);
    const report = await h.service.runner.runCycle();
    expect(report).toMatchObject({ skipped: false, walCompression: expected, jobsFinished: 1, counts: { deleted: 200 } });
    expect((await call(h.app, 'GET', `/v1/jobs/${jobId}`)).body.job).toMatchObject({ state: 'completed', counts: { deleted: 200, kept: 100 } });
  });

  it("off: the runner's session keeps the server's setting", async () => {
    const h = await serviceHarness({ sweepWalCompression: 'off' });
    harnesses.push(h);
    const [server] = await h.admin<{ wal_compression: string }[]>`select current_setting('wal_compression') as wal_compression`;
    await deletingJob(h);
    const report = await h.service.runner.runCycle();
    expect(report).toMatchObject({ skipped: false, walCompression: server!.wal_compression, jobsFinished: 1, counts: { deleted: 200 } });
  });
});
