import { appendSeen, cancel, createJob, seal, status, type CreateJobOptions } from '@craig/cleanup';
import type { FastifyInstance } from 'fastify';
import { MAX_ITEMS_PER_PAGE, type InventoryStore, type ProviderItem } from './inventory-store.ts';

const id = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
const serverIdParam = { type: 'object', required: ['serverId'], properties: { serverId: { type: 'integer', minimum: 1, maximum: 2_147_483_647 } } } as const;
const libraryIdParam = { type: 'object', required: ['libraryId'], properties: { libraryId: id } } as const;
const jobIdParam = { type: 'object', required: ['jobId'], properties: { jobId: id } } as const;
const named = {
  type: 'object',
  required: ['externalId', 'name'],
  additionalProperties: false,
  properties: { externalId: { type: 'string' }, name: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;

/**
 * The inventory HTTP API (see the service README). Every refusal is a typed error whose code
 * `@craig/service` maps to a status; nothing here picks one, except 201/202 for creations.
 */
export function registerRoutes(app: FastifyInstance, store: InventoryStore, jobs: CreateJobOptions): void {
  const sql = store.sqlClient;

  app.post<{ Body: { externalId: string; name: string } }>('/v1/servers', { schema: { body: named } }, async (req, reply) => {
    await reply.code(201).send({ server: await store.upsertServer(req.body.externalId, req.body.name) });
  });

  app.get<{ Params: { serverId: number } }>('/v1/servers/:serverId', { schema: { params: serverIdParam } }, async (req) => ({ server: await store.getServer(req.params.serverId) }));

  // Removing a server is a cleanup job: admission closes now, the runner drains it.
  app.delete<{ Params: { serverId: number } }>('/v1/servers/:serverId', { schema: { params: serverIdParam } }, async (req, reply) => {
    await reply.code(202).send({ job: await createJob(sql, { serverId: req.params.serverId, kind: 'remove-server' }, jobs) });
  });

  app.post<{ Params: { serverId: number }; Body: { externalId: string; name: string } }>(
    '/v1/servers/:serverId/libraries',
    { schema: { params: serverIdParam, body: named } },
    async (req, reply) => {
      await reply.code(201).send({ library: await store.upsertLibrary(req.params.serverId, req.body.externalId, req.body.name) });
    },
  );

  app.get<{ Params: { libraryId: number } }>('/v1/libraries/:libraryId', { schema: { params: libraryIdParam } }, async (req) => ({ library: await store.getLibrary(req.params.libraryId) }));

  app.delete<{ Params: { libraryId: number } }>('/v1/libraries/:libraryId', { schema: { params: libraryIdParam } }, async (req, reply) => {
    const library = await store.getLibrary(req.params.libraryId);
    await reply.code(202).send({ job: await createJob(sql, { serverId: library.serverId, libraryId: library.id, kind: 'remove-library' }, jobs) });
  });

  app.put<{ Params: { libraryId: number }; Body: { items: ProviderItem[] } }>(
    '/v1/libraries/:libraryId/items',
    {
      // 500 items of up to 128 + 1,000 + 100 characters, as JSON, with room to spare.
      bodyLimit: 1024 * 1024,
      schema: {
        params: libraryIdParam,
        body: {
          type: 'object',
          required: ['items'],
          additionalProperties: false,
          properties: {
            items: {
              type: 'array',
              maxItems: MAX_ITEMS_PER_PAGE,
              items: {
                type: 'object',
                required: ['externalId'],
                additionalProperties: false,
                properties: {
                  externalId: { type: 'string' },
                  title: { type: 'string', maxLength: 1000 },
                  classification: { type: 'string', minLength: 1, maxLength: 100 },
                },
              },
            },
          },
        },
      },
    },
    async (req) => store.upsertItems(req.params.libraryId, req.body.items),
  );

  app.get<{ Params: { libraryId: number }; Querystring: { after?: number; limit?: number } }>(
    '/v1/libraries/:libraryId/items',
    {
      schema: {
        params: libraryIdParam,
        querystring: { type: 'object', properties: { after: { type: 'integer', minimum: 0 }, limit: { type: 'integer', minimum: 1, maximum: MAX_ITEMS_PER_PAGE } } },
      },
    },
    async (req) => {
      await store.getLibrary(req.params.libraryId);
      return { items: await store.listItems(req.params.libraryId, req.query.after ?? 0, req.query.limit ?? 100) };
    },
  );

  // A sync: a prune job that collects the ids the provider traversal sees.
  app.post<{ Params: { libraryId: number } }>('/v1/libraries/:libraryId/syncs', { schema: { params: libraryIdParam } }, async (req, reply) => {
    const library = await store.getLibrary(req.params.libraryId);
    await reply.code(201).send({ job: await createJob(sql, { serverId: library.serverId, libraryId: library.id, kind: 'prune-library' }, jobs) });
  });

  // No maxItems / item schema here: 129 ids and malformed ids get the protocol's own typed errors.
  app.post<{ Params: { jobId: number }; Body: { externalIds: string[] } }>(
    '/v1/jobs/:jobId/seen',
    // 128 ids of up to 128 characters, with room to spare (129 ids still reach the protocol's own refusal).
    { bodyLimit: 64 * 1024, schema: { params: jobIdParam, body: { type: 'object', required: ['externalIds'], additionalProperties: false, properties: { externalIds: { type: 'array' } } } } },
    async (req) => appendSeen(sql, req.params.jobId, req.body.externalIds),
  );

  app.post<{ Params: { jobId: number }; Body: { expectedUniqueCount: number } }>(
    '/v1/jobs/:jobId/seal',
    {
      schema: {
        params: jobIdParam,
        body: { type: 'object', required: ['expectedUniqueCount'], additionalProperties: false, properties: { expectedUniqueCount: { type: 'integer', minimum: 0 } } },
      },
    },
    async (req) => ({ job: await seal(sql, req.params.jobId, { expectedUniqueCount: req.body.expectedUniqueCount }) }),
  );

  app.post<{ Params: { jobId: number } }>('/v1/jobs/:jobId/cancel', { schema: { params: jobIdParam } }, async (req) => ({ job: await cancel(sql, req.params.jobId) }));

  app.get<{ Params: { jobId: number } }>('/v1/jobs/:jobId', { schema: { params: jobIdParam } }, async (req) => ({ job: await status(sql, req.params.jobId) }));
}
