import { timingSafeEqual } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { errorBody, httpStatusFor } from './http-errors.ts';

export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

export interface HttpAppOptions {
  readonly service: string;
  readonly logger: Logger;
  readonly registry: Registry;
  /** Bearer token for every route under `/v1/admin/`. */
  readonly adminToken: string;
  /** Run by `/readyz`; any failure answers 503 naming the check. */
  readonly readiness?: readonly ReadinessCheck[];
  /** Largest accepted request body. */
  readonly bodyLimitBytes?: number;
}

/**
 * A Fastify app with what every craig service exposes: `/healthz` (the process runs),
 * `/readyz` (its dependencies answer), `/metrics` (Prometheus), bearer auth on `/v1/admin/*`,
 * and errors mapped to statuses by code in one place (`http-errors.ts`).
 */
export function createHttpApp(options: HttpAppOptions): FastifyInstance {
  // Widened once so the app is the default FastifyInstance type, not one generic over pino's Logger.
  const loggerInstance: FastifyBaseLogger = options.logger;
  const app = Fastify({
    loggerInstance,
    bodyLimit: options.bodyLimitBytes ?? 1024 * 1024,
    logController: new LogController({ disableRequestLogging: true }),
  });
  const token = Buffer.from(`Bearer ${options.adminToken}`);

  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/v1/admin/')) return;
    const given = Buffer.from(request.headers.authorization ?? '');
    if (given.length !== token.length || !timingSafeEqual(given, token)) {
      await reply.code(401).send({ error: { code: 'unauthorized', message: 'admin routes need Authorization: Bearer <admin token>' } });
    }
  });

  app.setErrorHandler(async (error: unknown, request, reply) => {
    const e = error as { validation?: unknown; statusCode?: number; code?: unknown; message?: string };
    let status: number;
    let body: { error: Record<string, unknown> };
    if (e.validation !== undefined) {
      status = 400;
      body = { error: { code: 'invalid_request', message: e.message } };
    } else if (typeof e.code === 'string' && e.code.startsWith('FST_') && e.statusCode !== undefined) {
      // Fastify's own request errors: malformed JSON, body too large, wrong content type.
      status = e.statusCode;
      body = { error: { code: status === 413 ? 'payload_too_large' : 'invalid_request', message: e.message } };
    } else {
      status = httpStatusFor(error);
      body = errorBody(error, status);
    }
    if (status >= 500) request.log.error({ err: error, route: request.routeOptions.url }, 'request failed');
    await reply.code(status).send(body);
  });

  app.setNotFoundHandler(async (request, reply) => {
    await reply.code(404).send({ error: { code: 'not_found', message: `no route ${request.method} ${request.url}` } });
  });

  app.get('/healthz', async () => ({ status: 'ok', service: options.service }));

  app.get('/readyz', async (_request, reply) => {
    const results = await Promise.all(
      (options.readiness ?? []).map(async (c) => {
        try {
          await c.check();
          return { name: c.name, ok: true };
        } catch (error) {
          return { name: c.name, ok: false, error: (error as Error).message };
        }
      }),
    );
    const ok = results.every((r) => r.ok);
    await reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'not_ready', service: options.service, checks: results });
  });

  app.get('/metrics', async (_request, reply) => {
    await reply.header('content-type', options.registry.contentType).send(await options.registry.metrics());
  });

  return app;
}
