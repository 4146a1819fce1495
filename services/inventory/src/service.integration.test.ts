import { eventually } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, serviceHarness, type ServiceHarness } from '../test/harness.ts';

let h: ServiceHarness;
beforeAll(async () => {
  h = await serviceHarness();
  h.service.runner.start();
});
afterAll(() => h.drop());

let n = 0;
async function serverWithLibraries(count: number): Promise<{ serverId: number; libraryIds: number[] }> {
  const server = await call(h.app, 'POST', '/v1/servers', { externalId: `srv-${++n}`, name: 'Plex' });
  expect(server.status).toBe(201);
  const libraryIds: number[] = [];
  for (let i = 0; i < count; i++) {
    const lib = await call(h.app, 'POST', `/v1/servers/${server.body.server.id}/libraries`, { externalId: `lib-${n}-${i}`, name: `Library ${i}` });
    expect(lib.status).toBe(201);
    libraryIds.push(lib.body.library.id);
  }
  return { serverId: server.body.server.id, libraryIds };
}

const page = (prefix: string, from: number, to: number, classification?: string) =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ externalId: `${prefix}-${from + i}`, title: `Title ${from + i}`, ...(classification ? { classification } : {}) }));

async function waitForJob(jobId: number, state: string) {
  return eventually(async () => {
    const job = await call(h.app, 'GET', `/v1/jobs/${jobId}`);
    expect(job.body.job.state).toBe(state);
    return job.body.job;
  });
}

describe('inventory service', () => {
  it('is ready only as the runtime role, and serves metrics', async () => {
    expect((await call(h.app, 'GET', '/readyz')).status).toBe(200);
    expect((await h.app.inject('/metrics')).body).toContain('cleanup_steps_total');
  });

  it('a full sync: pages upserted, a sync job collects the seen ids, seals, and the runner prunes the rest with its history', async () => {
    const { libraryIds: [lib, other] } = await serverWithLibraries(2);
    for (let from = 1; from <= 600; from += 200) {
      const put = await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('m', from, from + 199, 'movie') });
      expect(put).toEqual({ status: 200, body: { upserted: 200, classified: 200 } });
    }
    // Reclassifying adds history; repeating a classification does not.
    expect((await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('m', 1, 10, 'documentary') })).body).toEqual({ upserted: 10, classified: 10 });
    expect((await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('m', 1, 10, 'documentary') })).body).toEqual({ upserted: 10, classified: 0 });

    const sync = await call(h.app, 'POST', `/v1/libraries/${lib}/syncs`);
    expect(sync.status).toBe(201);
    const jobId = sync.body.job.id as number;
    expect(sync.body.job).toMatchObject({ state: 'collecting', kind: 'prune-library' });
    // The provider now lists items 1..250 only; pages are ≤ 128 ids.
    const seen = page('m', 1, 250).map((i) => i.externalId);
    for (let i = 0; i < seen.length; i += 128) {
      expect((await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: seen.slice(i, i + 128) })).status).toBe(200);
    }
    const sealed = await call(h.app, 'POST', `/v1/jobs/${jobId}/seal`, { expectedUniqueCount: 250 });
    expect(sealed.status).toBe(200);
    expect(sealed.body.job).toMatchObject({ state: 'deleting', manifestCount: 250 });

    const done = await waitForJob(jobId, 'completed');
    expect(done.counts).toMatchObject({ deleted: 350, kept: 250, moved: 0, alreadyAbsent: 0, retained: 0 });
    const library = await call(h.app, 'GET', `/v1/libraries/${lib}`);
    expect(library.body.library).toMatchObject({ items: 250, admission: 'open', cleanupJobId: null });
    const [history] = await h.admin`select count(*)::int as n, count(*) filter (where not exists (select 1 from items i where i.id = item_id))::int as orphans from item_classifications`;
    expect(history).toEqual({ n: 260, orphans: 0 });
    expect((await call(h.app, 'GET', `/v1/libraries/${other}`)).body.library.items).toBe(0);
  });

  it('refusals over HTTP: each gets its typed code and status and changes nothing', async () => {
    const { serverId, libraryIds: [lib, other] } = await serverWithLibraries(2);
    await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('r', 1, 5) });
    const jobId = (await call(h.app, 'POST', `/v1/libraries/${lib}/syncs`)).body.job.id as number;

    const busy = await call(h.app, 'POST', `/v1/libraries/${other}/syncs`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'server_busy', serverId, busyJobId: jobId });
    expect((await call(h.app, 'DELETE', `/v1/servers/${serverId}`)).body.error.code).toBe('server_busy');

    const tooMany = await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: page('r', 1, 129).map((i) => i.externalId) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ code: 'too_many_ids', count: 129, max: 128 });
    const malformed = await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: ['r-1', 'no spaces', 42] });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_external_ids');
    expect(malformed.body.error.invalid.map((i: { index: number }) => i.index)).toEqual([1, 2]);

    await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: ['r-1', 'r-2'] });
    const mismatch = await call(h.app, 'POST', `/v1/jobs/${jobId}/seal`, { expectedUniqueCount: 5 });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toMatchObject({ code: 'manifest_count_mismatch', expected: 5, actual: 2 });
    expect((await call(h.app, 'GET', `/v1/jobs/${jobId}`)).body.job).toMatchObject({ state: 'collecting', manifestCount: 2 });

    expect((await call(h.app, 'GET', '/v1/jobs/99999999')).status).toBe(404);
    expect((await call(h.app, 'GET', '/v1/jobs/99999999')).body.error.code).toBe('job_not_found');
    expect((await call(h.app, 'GET', '/v1/libraries/99999999')).body.error).toMatchObject({ code: 'parent_not_found', scope: 'library' });
    const dupPage = await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: [{ externalId: 'd-1' }, { externalId: 'd-1' }] });
    expect(dupPage.body.error.code).toBe('invalid_external_ids');

    const cancelled = await call(h.app, 'POST', `/v1/jobs/${jobId}/cancel`);
    expect(cancelled.body.job).toMatchObject({ state: 'cancelled', cancelReason: 'requested' });
    expect((await call(h.app, 'POST', `/v1/jobs/${jobId}/cancel`)).body.error.code).toBe('job_state_conflict');
    expect((await call(h.app, 'GET', `/v1/libraries/${lib}`)).body.library.items).toBe(5);
  });

  it('a late write to a sealed library is refused while its neighbour accepts writes; moves out work, moves in do not', async () => {
    const { libraryIds: [lib, other] } = await serverWithLibraries(2);
    await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('late', 1, 3) });
    await h.service.runner.stop();
    try {
      const jobId = (await call(h.app, 'POST', `/v1/libraries/${lib}/syncs`)).body.job.id as number;
      await call(h.app, 'POST', `/v1/jobs/${jobId}/seen`, { externalIds: ['late-1', 'late-2'] });
      await call(h.app, 'POST', `/v1/jobs/${jobId}/seal`, { expectedUniqueCount: 2 });

      const late = await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('late', 4, 4) });
      expect(late.status).toBe(409);
      expect(late.body.error).toMatchObject({ code: 'admission_closed', scope: 'library', id: lib });
      expect((await call(h.app, 'PUT', `/v1/libraries/${other}/items`, { items: page('o', 1, 2) })).status).toBe(200);
      // The provider now lists late-3 in the other library: it moves out of the draining one.
      expect((await call(h.app, 'PUT', `/v1/libraries/${other}/items`, { items: page('late', 3, 3) })).body).toEqual({ upserted: 1, classified: 0 });
      // …but o-1 cannot move into the draining library.
      expect((await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('o', 1, 1) })).body.error.code).toBe('admission_closed');
      h.service.runner.start();
      const done = await waitForJob(jobId, 'completed');
      expect(done.counts).toMatchObject({ deleted: 0, kept: 2 });
      expect((await call(h.app, 'GET', `/v1/libraries/${other}/items`)).body.items.map((i: { externalId: string }) => i.externalId).sort()).toEqual(['late-3', 'o-1', 'o-2']);
    } finally {
      h.service.runner.start();
    }
  });

  it('deleting a library or a server goes through the protocol', async () => {
    const { serverId, libraryIds: [lib, second] } = await serverWithLibraries(2);
    await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('del', 1, 300, 'show') });
    const removeLib = await call(h.app, 'DELETE', `/v1/libraries/${lib}`);
    expect(removeLib.status).toBe(202);
    expect(removeLib.body.job).toMatchObject({ kind: 'remove-library', state: 'deleting' });
    // Admission closed at once.
    expect((await call(h.app, 'PUT', `/v1/libraries/${lib}/items`, { items: page('del', 301, 301) })).body.error.code).toBe('admission_closed');
    const libDone = await waitForJob(removeLib.body.job.id, 'completed');
    expect(libDone.counts).toMatchObject({ deleted: 300, librariesRemoved: 1 });
    expect((await call(h.app, 'GET', `/v1/libraries/${lib}`)).status).toBe(404);

    await call(h.app, 'PUT', `/v1/libraries/${second}/items`, { items: page('srv', 1, 20) });
    const removeServer = await call(h.app, 'DELETE', `/v1/servers/${serverId}`);
    expect(removeServer.status).toBe(202);
    expect((await call(h.app, 'POST', `/v1/servers/${serverId}/libraries`, { externalId: 'too-late', name: 'x' })).body.error).toMatchObject({ code: 'admission_closed', scope: 'server' });
    const srvDone = await waitForJob(removeServer.body.job.id, 'completed');
    expect(srvDone.counts).toMatchObject({ deleted: 20, librariesRemoved: 1, serversRemoved: 1 });
    expect((await call(h.app, 'GET', `/v1/servers/${serverId}`)).status).toBe(404);
    const [orphans] = await h.admin`select count(*)::int as n from item_classifications h where not exists (select 1 from items i where i.id = h.item_id)`;
    expect(orphans?.n).toBe(0);
  });
});
