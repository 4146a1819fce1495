// What the inventory service gives `pnpm xtask devstack`: aged transport history for the sweep,
// a seeded server graph, and sync traffic over the HTTP API that ends in cleanup jobs.
import type { Sql } from '@craig/db';
import type { DemoContext, ServiceDemo } from '@craig/service';
import { MAX_IDS_PER_CALL } from '@craig/cleanup';
import { MAX_ITEMS_PER_PAGE } from './inventory-store.ts';

/** A demo HTTP call the service refused (or that did not reach it): the status and the error code it answered. */
export class DemoRequestFailed extends Error {
  override readonly name = 'DemoRequestFailed';
  readonly code = 'demo_request_failed';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    const code = errorField(body, 'code');
    super(`${method} ${path}: HTTP ${status}${typeof code === 'string' ? ` (${code})` : ''}`);
  }
}

export interface InventoryDemoOptions {
  /** Items upserted into the demo library per tick; default 40. */
  readonly itemsPerTick?: number;
  /** The first sync starts at this tick (after registration); default 3. */
  readonly firstSyncTick?: number;
  /** Ticks between the starts of two syncs; default 15. */
  readonly syncEveryTicks?: number;
  /** Share of the library's items a sync reports as seen (the rest are pruned); default 0.5. */
  readonly seenShare?: number;
}

/** Tables the devstack's live view counts (fixed names of the `mq` and `cleanup` sets). */
export const INVENTORY_DEMO_TABLES = ['items', 'libraries', 'cleanup_jobs', 'event_outbox', 'event_inbox'] as const;

/**
 * Aged history on an owner connection to a freshly migrated inventory database. Of `rows`:
 * 60 % published outbox rows 40–60 days old (past the 30-day window: the sweep deletes them),
 * 5 % published ones 1–10 days old (kept), a few aged pending rows (the worker publishes them
 * before any prune may delete them) and parked ones (never pruned), 30 % inbox records 32–60
 * days old (past 31 days) and 5 % recent ones, and a server with three libraries holding 5 %
 * as items. Every cutoff-relevant timestamp comes from the database's `now()`.
 */
export async function seedInventoryHistory(sql: Sql, options: { readonly rows: number }): Promise<void> {
  const rows = Math.max(0, Math.floor(options.rows));
  const share = (fraction: number, min = 0) => Math.max(min, Math.round(rows * fraction));
  await sql.begin(async (tx) => {
    // published_at >= created_at (event_outbox_published_after_created).
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at, last_attempt_at)
      select gen_random_uuid(), 'library', (g % 50)::text, 'library.synced', jsonb_build_object('seq', g, 'aged', true), t, t + interval '2 seconds', t + interval '1 second'
      from generate_series(1, ${share(0.6)}::int) g, lateral (select now() - interval '40 days' - random() * interval '20 days' + g * interval '0 seconds' as t) a`;
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at, last_attempt_at)
      select gen_random_uuid(), 'library', (g % 50)::text, 'library.synced', jsonb_build_object('seq', g), t, t + interval '2 seconds', t + interval '1 second'
      from generate_series(1, ${share(0.05)}::int) g, lateral (select now() - interval '1 day' - random() * interval '9 days' + g * interval '0 seconds' as t) a`;
    // Pending: never published, so never pruned while pending (the worker drains them first).
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
      select gen_random_uuid(), 'library', (g % 50)::text, 'library.synced', jsonb_build_object('seq', g, 'pending', true), now() - interval '45 days' - g * interval '1 minute'
      from generate_series(1, ${share(0.005, 5)}::int) g`;
    // Parked after OUTBOX_MAX_ATTEMPTS failures: evidence an operator must look at, never pruned.
    await tx`
      insert into event_outbox (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, attempts, last_error, last_attempt_at, parked_at, parked_reason)
      select gen_random_uuid(), 'library', g::text, 'library.synced', jsonb_build_object('seq', g, 'parked', true), t, 10, 'broker nacked the publish', t + interval '1 hour', t + interval '1 hour', 'max_attempts'
      from generate_series(1, 3) g, lateral (select now() - interval '50 days' - g * interval '1 hour' as t) a`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'inventory.provider-events', gen_random_uuid(), 'provider.library-changed', now() - interval '32 days' - random() * interval '28 days' + g * interval '0 seconds'
      from generate_series(1, ${share(0.3)}::int) g`;
    await tx`
      insert into event_inbox (consumer, event_id, event_type, received_at)
      select 'inventory.provider-events', gen_random_uuid(), 'provider.library-changed', now() - random() * interval '20 days' + g * interval '0 seconds'
      from generate_series(1, ${share(0.05)}::int) g`;

    // The source graph goes through the admission triggers like any writer's rows.
    const [server] = await tx<{ id: number }[]>`
      insert into servers (external_id, name) values ('seed-server', 'Seeded media server')
      on conflict (external_id) do update set name = excluded.name returning id`;
    const libraries = await tx<{ id: string }[]>`
      insert into libraries (server_id, external_id, name)
      select ${server!.id}, 'seed-library-' || g, 'Seeded library ' || g from generate_series(1, 3) g
      on conflict (server_id, external_id) do update set name = excluded.name returning id::text`;
    const ids = libraries.map((l) => l.id);
    await tx`
      insert into items (server_id, library_id, external_id, title)
      select ${server!.id}, (${ids}::bigint[])[1 + g % ${ids.length}::int], 'seed-item-' || g, 'Seeded item ' || g
      from generate_series(1, ${share(0.05)}::int) g
      on conflict (server_id, external_id) do nothing`;
  });
}

interface SyncState {
  readonly jobId: number;
  readonly seen: number;
}

/**
 * One demo per devstack: registers a server and library once, upserts a page of new items per
 * tick, and every `syncEveryTicks` runs a sync over the HTTP API: a prune job, seen-id pages
 * (≤ 128 ids each) covering about half of the library, a seal with the exact count. The cleanup
 * runner then deletes the unseen items; while the job runs the library is draining, so upserts
 * pause until it ends.
 */
export function createInventoryDemo(options: InventoryDemoOptions = {}): ServiceDemo {
  const itemsPerTick = options.itemsPerTick ?? 40;
  const firstSyncTick = options.firstSyncTick ?? 3;
  const syncEveryTicks = options.syncEveryTicks ?? 15;
  const seenShare = options.seenShare ?? 0.5;
  let libraryId: number | undefined;
  let runTag: string | undefined;
  let nextItem = 0;
  let lastSyncTick: number | undefined;
  let sync: SyncState | undefined;

  return {
    tables: INVENTORY_DEMO_TABLES,
    seedAgedHistory: seedInventoryHistory,
    async tick(ctx: DemoContext): Promise<void> {
      const base = ctx.urlOf('inventory');
      if (!base) return;
      const call = (method: string, path: string, body?: unknown) => request(ctx, base, method, path, body);

      if (libraryId === undefined) {
        runTag ??= Math.floor(ctx.random() * 36 ** 5).toString(36);
        const { server } = (await call('POST', '/v1/servers', { externalId: 'demo-server', name: 'Demo media server' })) as { server: { id: number } };
        const { library } = (await call('POST', `/v1/servers/${server.id}/libraries`, { externalId: 'demo-library', name: 'Demo library' })) as { library: { id: number } };
        libraryId = library.id;
        return;
      }

      if (sync) {
        const { job } = (await call('GET', `/v1/jobs/${sync.jobId}`)) as { job: { state: string } };
        // While the job deletes, the library is draining: new items would be refused.
        if (job.state === 'collecting' || job.state === 'deleting') return;
        sync = undefined;
      }

      const items = Array.from({ length: itemsPerTick }, () => {
        const n = nextItem++;
        return { externalId: `demo-${runTag}-${n}`, title: `Demo item ${n}`, classification: ctx.random() < 0.5 ? 'film' : 'series' };
      });
      await call('PUT', `/v1/libraries/${libraryId}/items`, { items });

      const due = ctx.tick >= firstSyncTick && (lastSyncTick === undefined || ctx.tick - lastSyncTick >= syncEveryTicks);
      if (due) {
        lastSyncTick = ctx.tick;
        sync = await runSync(call, libraryId, () => ctx.random() < seenShare);
      }
    },
  };
}

type Call = (method: string, path: string, body?: unknown) => Promise<unknown>;

/** Start a prune job, report the seen ids in pages and seal it; a stale job on the server is cancelled or waited for. */
async function runSync(call: Call, libraryId: number, keep: () => boolean): Promise<SyncState | undefined> {
  let jobId: number;
  try {
    ({
      job: { id: jobId },
    } = (await call('POST', `/v1/libraries/${libraryId}/syncs`)) as { job: { id: number } });
  } catch (error) {
    // A job left by an earlier devstack run: a collecting one is abandoned (cancel it), a
    // deleting one is waited for.
    if (error instanceof DemoRequestFailed && errorField(error.body, 'code') === 'server_busy') {
      const busy = Number(errorField(error.body, 'busyJobId'));
      if (errorField(error.body, 'busyState') === 'collecting') await call('POST', `/v1/jobs/${busy}/cancel`);
      return { jobId: busy, seen: 0 };
    }
    throw error;
  }
  try {
    const seen: string[] = [];
    for (let after = 0; ; ) {
      const { items } = (await call('GET', `/v1/libraries/${libraryId}/items?after=${after}&limit=${MAX_ITEMS_PER_PAGE}`)) as { items: Array<{ id: number; externalId: string }> };
      for (const item of items) if (keep()) seen.push(item.externalId);
      if (items.length < MAX_ITEMS_PER_PAGE) break;
      after = items.at(-1)!.id;
    }
    for (let i = 0; i < seen.length; i += MAX_IDS_PER_CALL) await call('POST', `/v1/jobs/${jobId}/seen`, { externalIds: seen.slice(i, i + MAX_IDS_PER_CALL) });
    await call('POST', `/v1/jobs/${jobId}/seal`, { expectedUniqueCount: seen.length });
    return { jobId, seen: seen.length };
  } catch (error) {
    // A sync that cannot finish is abandoned now rather than blocking the server until its deadline.
    await call('POST', `/v1/jobs/${jobId}/cancel`).catch(() => undefined);
    throw error;
  }
}

async function request(ctx: DemoContext, base: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${base}${path}`, {
    method,
    signal: ctx.signal,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new DemoRequestFailed(method, path, res.status, parsed);
  return parsed;
}

function errorField(body: unknown, field: string): unknown {
  if (typeof body !== 'object' || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[field] : undefined;
}

/** The inventory service's devstack demo (`pnpm xtask devstack` imports it from the package entry). */
export const demo: ServiceDemo = createInventoryDemo();
