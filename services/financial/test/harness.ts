import type { Sql } from '@craig/db';
import { producer as producerOn, serviceHarness as harness, type ServiceHarness as Harness, type TestTransport, type TransportKind } from '@craig/service-testkit';
import { financialMigrationSets } from '../src/migrations.ts';
import { createService, type FinancialService, type FinancialSweepDeps } from '../src/service.ts';

export { ADMIN_TOKEN, call, counterValue as metricValue, testTransport, type Producer, type TestTransport, type TransportKind } from '@craig/service-testkit';
export type ServiceHarness = Harness<FinancialService>;

/** A migrated financial database, a transport, and the service on them. */
export function serviceHarness(options: { readonly transport?: TransportKind; readonly prefix?: string; readonly sweep?: FinancialSweepDeps } = {}): Promise<ServiceHarness> {
  const { sweep, ...rest } = options;
  return harness({
    name: 'financial',
    migrations: financialMigrationSets(),
    queues: ['financial.placements'],
    ...rest,
    build: ({ deps }) => createService({ ...deps, sweep: sweep ?? { retentionDays: 90 }, inboxMaxRetries: 2, inboxMaxDeliveries: 3, consumers: { retryDelayMs: () => 10 } }),
  });
}

/** The producer service (default placements) publishing on the harness's transport. */
export const producer = (bus: TestTransport, service = 'placements') => producerOn(bus, service, 'financial');

/**
 * Queue rows with explicit past timestamps (an INSERT overrides the defaults), as the service's
 * writers would have left them: `settled` ones carry an import, as a settled row always does.
 */
export async function seedQueue(sql: Sql, rows: { readonly status: 'pending' | 'matched' | 'settled'; readonly count: number; readonly ageDays: number; readonly placement?: string }): Promise<void> {
  const [imp] = await sql<{ id: string }[]>`
    insert into subsidy_imports (source, period, status, row_count, matched_count, completed_at)
    values ('seed-' || gen_random_uuid(), date_trunc('month', now())::date, 'completed', 0, 0, now())
    returning id::text`;
  const done = rows.status !== 'pending';
  await sql`
    insert into subsidy_reconcile_queue (event_id, placement_id, case_id, kind, amount, status, import_id, enqueued_at, matched_at, settled_at)
    select gen_random_uuid(), coalesce(${rows.placement ?? null}, 'p-' || g), 'c-1', 'placement_started',
           ${done ? '10.00' : null}::numeric, ${rows.status},
           ${done ? imp!.id : null}::bigint,
           now() - make_interval(days => ${rows.ageDays} + 2, secs => g),
           ${done ? sql`now() - make_interval(days => ${rows.ageDays} + 1, secs => g)` : sql`null`},
           ${rows.status === 'settled' ? sql`now() - make_interval(days => ${rows.ageDays}, secs => g)` : sql`null`}
    from generate_series(1, ${rows.count}) g`;
}
