-- The PostgreSQL bus (docs/adr/022-events.md): the zero-install transport. It lives in its own
-- database (BUS_DATABASE_URL) shared by the fleet.

-- One row per consumer: the topic patterns it is bound to, and the same patterns compiled to
-- one regular expression over '.' || routing_key (see src/internal/topic.ts).
create table bus_subscriptions (
  consumer text primary key,
  patterns text[] not null,
  pattern_regex text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One row per (message, subscribed consumer), copied at publish. Acknowledging deletes the
-- row, so the table holds only what is still undelivered or in flight.
create table bus_deliveries (
  id bigserial primary key,
  consumer text not null,
  event_id uuid not null,
  routing_key text not null,
  body text not null,
  headers jsonb not null default '{}'::jsonb,
  enqueued_at timestamptz not null default now(),
  -- A failed delivery becomes visible again after its retry delay.
  visible_at timestamptz not null default now(),
  -- Failed handler attempts.
  attempts integer not null default 0,
  last_error text
);

create index bus_deliveries_consumer on bus_deliveries (consumer, id);

-- Deliveries that failed past the consumer's retry cap. Kept until a dead-letter consumer
-- acknowledges them, and counted.
create table bus_dead_letters (
  id bigserial primary key,
  consumer text not null,
  event_id uuid not null,
  routing_key text not null,
  body text not null,
  headers jsonb not null default '{}'::jsonb,
  error text not null,
  attempts integer not null,
  enqueued_at timestamptz not null,
  dead_lettered_at timestamptz not null default now(),
  visible_at timestamptz not null default now(),
  -- Failed attempts of the dead-letter consumer (it is retried, never dropped).
  dlq_attempts integer not null default 0
);

-- A queue table: nearly every row is deleted soon after it is inserted. Vacuum it by dead-row
-- count, not by a fraction of a table that is usually almost empty.
alter table bus_deliveries set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000);
alter table bus_dead_letters set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
