import type { Sql } from '@craig/db';
import { parseRequest } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { endPlacement, getPlacement, listPlacements, MAX_PLACEMENTS_PER_PAGE, MAX_PROVIDER_LENGTH, startPlacement } from './placement-store.ts';

const uuid = (what: string) => z.guid({ error: `must be ${what} (a UUID)` });
const idParams = z.object({ id: uuid('a placement id') });
const startBody = z.strictObject({ caseId: uuid('a case id'), provider: z.string().trim().min(1).max(MAX_PROVIDER_LENGTH) });
const listQuery = z.strictObject({
  caseId: uuid('a case id').optional(),
  status: z.enum(['active', 'ended']).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_PLACEMENTS_PER_PAGE).default(50),
});

/**
 * The placements HTTP API (see the service README). Refusals are typed errors whose code
 * `@craig/service` maps to a status; a refused write writes nothing and stages nothing.
 */
export function registerRoutes(app: FastifyInstance, sql: Sql): void {
  app.post('/v1/placements', async (req, reply) => {
    const { caseId, provider } = parseRequest(startBody, req.body, 'body');
    await reply.code(201).send(await sql.begin((tx) => startPlacement(tx, caseId, provider)));
  });

  app.post('/v1/placements/:id/end', async (req) => {
    const { id } = parseRequest(idParams, req.params, 'params');
    return sql.begin((tx) => endPlacement(tx, id));
  });

  app.get('/v1/placements/:id', async (req) => {
    const { id } = parseRequest(idParams, req.params, 'params');
    return getPlacement(sql, id);
  });

  app.get('/v1/placements', async (req) => {
    const query = parseRequest(listQuery, req.query, 'query');
    return { placements: await listPlacements(sql, query) };
  });
}
