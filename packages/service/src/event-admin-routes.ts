import type { FastifyInstance } from 'fastify';

export interface ReplayRequest {
  readonly from: string;
  readonly to: string;
}

export interface RedriveRequest {
  /** Outbox row ids; all parked rows (oldest first, up to `limit`) when absent. */
  readonly ids?: readonly string[];
  readonly limit?: number;
}

export interface EventAdminHandlers {
  /** `replayEvents(sql, range, settings.retention)`; its `ReplayOutOfWindowError` answers 400. */
  readonly replay: (range: ReplayRequest) => Promise<unknown>;
  /** `redriveParked(sql, settings.retention, request)`. */
  readonly redrive?: (request: RedriveRequest) => Promise<unknown>;
}

/**
 * `POST /v1/admin/events/replay` and `POST /v1/admin/events/redrive`, the admin operations every
 * service exposes (behind the admin token like every `/v1/admin/*` route). The handlers come
 * from the service (`outboxAdminHandlers(sql, retention)` for the usual ones).
 */
export function registerEventAdminRoutes(app: FastifyInstance, handlers: EventAdminHandlers): void {
  app.post<{ Body: ReplayRequest }>(
    '/v1/admin/events/replay',
    {
      bodyLimit: 1024,
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['from', 'to'],
          properties: { from: { type: 'string', minLength: 1, maxLength: 64 }, to: { type: 'string', minLength: 1, maxLength: 64 } },
        },
      },
    },
    async (request) => handlers.replay(request.body),
  );
  const { redrive } = handlers;
  if (!redrive) return;
  app.post<{ Body: RedriveRequest }>(
    '/v1/admin/events/redrive',
    {
      // 10,000 ids of up to 19 digits, quoted and comma-separated, with room to spare.
      bodyLimit: 256 * 1024,
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ids: { type: 'array', maxItems: 10_000, items: { type: 'string', pattern: '^[0-9]{1,19}$' } },
            limit: { type: 'integer', minimum: 1, maximum: 100_000 },
          },
        },
      },
    },
    async (request) => redrive(request.body),
  );
}
