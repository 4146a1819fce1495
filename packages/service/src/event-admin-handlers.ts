import type { Sql } from '@craig/db';
import { redriveParked, replayEvents, type RetentionWindows } from '@craig/mq';
import type { EventAdminHandlers } from './event-admin-routes.ts';

/** Replay and redrive on the service's own outbox (`@craig/mq`): what `registerEventAdminRoutes` usually gets. */
export function outboxAdminHandlers(sql: Sql, retention: RetentionWindows): EventAdminHandlers {
  return {
    replay: (range) => replayEvents(sql, range, retention),
    redrive: (request) =>
      redriveParked(sql, retention, {
        ...(request.ids ? { ids: request.ids } : {}),
        ...(request.limit ? { limit: request.limit } : {}),
      }),
  };
}
