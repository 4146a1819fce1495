import { fileURLToPath } from 'node:url';
import type { MigrationSet } from '@craig/db';

/**
 * The schema every service applies to its own database, before its own sets: `event_outbox`,
 * `event_inbox`, `prune_latch` and `dedup_horizon_observations`.
 */
export const MQ_MIGRATIONS: MigrationSet = Object.freeze({ name: 'mq', directory: fileURLToPath(new URL('../sql/', import.meta.url)) });

/** The PostgreSQL bus database's schema (`bus_subscriptions`, `bus_deliveries`, `bus_dead_letters`); apply it to BUS_DATABASE_URL. */
export const BUS_MIGRATIONS: MigrationSet = Object.freeze({ name: 'bus', directory: fileURLToPath(new URL('../sql/bus/', import.meta.url)) });
