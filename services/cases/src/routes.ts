import type { Sql } from '@craig/db';
import { parseRequest } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { closeCase, getCase, listCases, MAX_CASES_PER_PAGE, MAX_SUBJECT_LENGTH, openCase } from './case-store.ts';

const caseIdParams = z.object({ id: z.guid({ error: 'must be a case id (a UUID)' }) });
const openBody = z.strictObject({ subject: z.string().trim().min(1).max(MAX_SUBJECT_LENGTH) });
const listQuery = z.strictObject({
  status: z.enum(['open', 'closed']).optional(),
  order: z.enum(['oldest', 'newest']).default('oldest'),
  limit: z.coerce.number().int().min(1).max(MAX_CASES_PER_PAGE).default(50),
});

/**
 * The cases HTTP API (see the service README). Refusals are typed errors whose code
 * `@craig/service` maps to a status; a refused write writes nothing and stages nothing.
 */
export function registerRoutes(app: FastifyInstance, sql: Sql): void {
  app.post('/v1/cases', async (req, reply) => {
    const { subject } = parseRequest(openBody, req.body, 'body');
    const opened = await sql.begin((tx) => openCase(tx, subject));
    await reply.code(201).send({ id: opened.id, openedAt: opened.openedAt });
  });

  app.post('/v1/cases/:id/close', async (req) => {
    const { id } = parseRequest(caseIdParams, req.params, 'params');
    return sql.begin((tx) => closeCase(tx, id));
  });

  app.get('/v1/cases/:id', async (req) => {
    const { id } = parseRequest(caseIdParams, req.params, 'params');
    return getCase(sql, id);
  });

  app.get('/v1/cases', async (req) => {
    const query = parseRequest(listQuery, req.query, 'query');
    return { cases: await listCases(sql, query) };
  });
}
