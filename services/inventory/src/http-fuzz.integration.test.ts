// Every route of the inventory API under hostile input (`describeHttpFuzz`, @craig/service-testkit),
// the service running as its runtime role and the fingerprint read as the owner.
import { describeHttpFuzz, fc, shapedObject } from '@craig/service-testkit';
import { ADMIN_TOKEN, call, serviceHarness } from '../test/harness.ts';

const h = await serviceHarness();
const servers: number[] = [];
const libraries: number[] = [];
for (const s of [1, 2]) {
  const server = await call(h.app, 'POST', '/v1/servers', { externalId: `srv-${s}`, name: `Server ${s}` });
  servers.push(server.body.server.id as number);
  for (const l of [1, 2]) libraries.push((await call(h.app, 'POST', `/v1/servers/${server.body.server.id}/libraries`, { externalId: `lib-${s}-${l}`, name: `Library ${l}` })).body.library.id as number);
}
await call(h.app, 'PUT', `/v1/libraries/${libraries[0]}/items`, { items: [{ externalId: 'i-1' }, { externalId: 'i-2', title: 't' }] });
const job = (await call(h.app, 'POST', `/v1/libraries/${libraries[1]}/syncs`)).body.job.id as number;
const num = (ids: readonly number[]) => fc.oneof(fc.constantFrom(...ids.map(String)), fc.integer({ min: 0, max: 2 ** 31 }).map(String));
const externalId = fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,10}$/), fc.constantFrom('', ' x', 'x'.repeat(129), 'no spaces'));
const named = shapedObject({ externalId, name: fc.string({ maxLength: 201 }) });

describeHttpFuzz({
  service: 'inventory',
  app: h.app,
  owner: h.admin,
  adminToken: ADMIN_TOKEN,
  drop: () => h.drop(),
  shapes: {
    'POST /v1/servers': { body: named },
    'GET /v1/servers/:serverId': { params: { serverId: num(servers) } },
    'DELETE /v1/servers/:serverId': { params: { serverId: num(servers) } },
    'POST /v1/servers/:serverId/libraries': { params: { serverId: num(servers) }, body: named },
    'GET /v1/libraries/:libraryId': { params: { libraryId: num(libraries) } },
    'DELETE /v1/libraries/:libraryId': { params: { libraryId: num(libraries) } },
    'PUT /v1/libraries/:libraryId/items': {
      params: { libraryId: num(libraries) },
      body: shapedObject({ items: fc.array(shapedObject({ externalId, title: fc.string({ maxLength: 1001 }), classification: fc.string({ maxLength: 101 }) }), { maxLength: 5 }) }),
    },
    'GET /v1/libraries/:libraryId/items': { params: { libraryId: num(libraries) }, query: { after: fc.integer({ min: -1, max: 100 }).map(String), limit: fc.integer({ min: 0, max: 501 }).map(String) } },
    'POST /v1/libraries/:libraryId/syncs': { params: { libraryId: num(libraries) } },
    'POST /v1/jobs/:jobId/seen': { params: { jobId: num([job]) }, body: shapedObject({ externalIds: fc.array(fc.oneof(externalId, fc.integer()), { maxLength: 130 }) }) },
    'POST /v1/jobs/:jobId/seal': { params: { jobId: num([job]) }, body: shapedObject({ expectedUniqueCount: fc.integer({ min: -1, max: 200 }) }) },
    'POST /v1/jobs/:jobId/cancel': { params: { jobId: num([job]) } },
    'GET /v1/jobs/:jobId': { params: { jobId: num([job]) } },
  },
});
