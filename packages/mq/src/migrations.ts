import { fileURLToPath } from 'node:url';
import { defineRuntimeGrants, type MigrationSet } from '@craig/db';

/**
 * The schema every service applies to its own database, before its own sets: `event_outbox`,
 * `event_inbox`, `prune_latch` and `dedup_horizon_observations`.
 *
 * The runtime role stages, drains, replays and sweeps events (docs/adr/063-runtime-roles.md): it
 * may delete outbox and inbox rows (the transport sweep runs as it) but may change only an
 * outbox row's delivery state, never what an event says or when it was staged.
 */
export const MQ_MIGRATIONS: MigrationSet = Object.freeze({
  name: 'mq',
  directory: fileURLToPath(new URL('../sql/', import.meta.url)),
  runtimeGrants: defineRuntimeGrants({
    tables: {
      event_outbox: ['select', 'insert', 'delete'],
      event_inbox: ['select', 'insert', 'delete'],
      prune_latch: ['select', 'insert', 'delete'],
      // A consumer records what it last saw of each producer; only an operator deletes a row.
      dedup_horizon_observations: ['select', 'insert'],
    },
    updateColumns: {
      dedup_horizon_observations: ['producer_outbox_days', 'producer_inbox_days', 'consumer_inbox_days', 'violated', 'observed_at'],
      event_outbox: ['published_at', 'attempts', 'last_error', 'last_attempt_at', 'next_attempt_at', 'parked_at', 'parked_reason', 'replayed_at', 'replay_count'],
      // `on conflict (target) do update set target = …`: a latch is never rewritten, only kept.
      prune_latch: ['target'],
    },
    // The drain's claim (sql/000005_outbox_claim.sql), with the caller's rights.
    functions: ['event_outbox_claim(integer, bigint, timestamptz)'],
  }),
});

/** The PostgreSQL bus database's schema (`bus_subscriptions`, `bus_deliveries`, `bus_dead_letters`); apply it to BUS_DATABASE_URL. */
export const BUS_MIGRATIONS: MigrationSet = Object.freeze({ name: 'bus', directory: fileURLToPath(new URL('../sql/bus/', import.meta.url)) });
