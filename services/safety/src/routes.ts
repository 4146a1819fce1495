import type { Sql } from '@craig/db';
import { parseRequest } from '@craig/service';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fileReport, getReport, listReports, MAX_REPORTS_PER_PAGE, MAX_SUMMARY_LENGTH, SEVERITIES } from './report-store.ts';

const uuid = (what: string) => z.guid({ error: `must be ${what} (a UUID)` });
const idParams = z.object({ id: uuid('a safety report id') });
const fileBody = z.strictObject({ caseId: uuid('a case id'), severity: z.enum(SEVERITIES), summary: z.string().trim().min(1).max(MAX_SUMMARY_LENGTH) });
const listQuery = z.strictObject({ caseId: uuid('a case id').optional(), limit: z.coerce.number().int().min(1).max(MAX_REPORTS_PER_PAGE).default(50) });

/**
 * The safety HTTP API (see the service README). Refusals are typed errors whose code
 * `@craig/service` maps to a status; a refused write writes nothing and stages nothing.
 */
export function registerRoutes(app: FastifyInstance, sql: Sql): void {
  app.post('/v1/safety-reports', async (req, reply) => {
    const body = parseRequest(fileBody, req.body, 'body');
    await reply.code(201).send(await sql.begin((tx) => fileReport(tx, body)));
  });

  app.get('/v1/safety-reports/:id', async (req) => {
    const { id } = parseRequest(idParams, req.params, 'params');
    return getReport(sql, id);
  });

  app.get('/v1/safety-reports', async (req) => {
    const query = parseRequest(listQuery, req.query, 'query');
    return { reports: await listReports(sql, query) };
  });
}
