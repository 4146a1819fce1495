-- The transactional outbox (docs/adr/022-events.md). A service stages an event in the same
-- transaction as the business write that caused it; the outbox worker publishes it later.
--
-- Retention (docs/adr/058-retention.md, class 1): only PUBLISHED rows are pruned, after
-- EVENT_OUTBOX_RETENTION_DAYS. Pending rows (published_at IS NULL) and parked rows are the
-- only evidence that an event did not propagate and are never deleted by the sweep.
create table event_outbox (
  id bigserial primary key,
  event_id uuid not null,
  aggregate_type text not null,
  aggregate_id text not null,
  event_type text not null,
  payload jsonb not null,
  headers jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  -- Stamped only after the broker confirmed the publish.
  published_at timestamptz,
  -- Failed publish attempts of THIS row (a broker nack, a channel error while publishing it).
  -- An unreachable broker is not counted: the worker backs off instead (docs/adr/022-events.md).
  attempts integer not null default 0,
  last_error text,
  last_attempt_at timestamptz,
  -- Per-row retry backoff after a counted failure.
  next_attempt_at timestamptz,
  -- Parked rows are never retried automatically and never pruned; redriveParked() sends them again.
  parked_at timestamptz,
  parked_reason text,
  -- Set by replayEvents(): the row was published before and re-nulled to publish it again.
  replayed_at timestamptz,
  replay_count integer not null default 0,
  constraint event_outbox_event_id_key unique (event_id),
  constraint event_outbox_published_after_created check (published_at >= created_at),
  constraint event_outbox_parked_has_reason check ((parked_at is null) = (parked_reason is null)),
  constraint event_outbox_parked_is_unpublished check (parked_at is null or published_at is null),
  constraint event_outbox_parked_reason_known check (parked_reason in ('malformed', 'max_attempts', 'oversize', 'replay_past_horizon')),
  constraint event_outbox_attempts_non_negative check (attempts >= 0 and replay_count >= 0)
);

-- The drain claims the oldest pending rows: without this partial index the claim steps over
-- every published row still in the table (shared/notes/prune-measurements.md: 0.41x vs 0.63x).
create index event_outbox_pending on event_outbox (id) where published_at is null and parked_at is null;

-- The retention sweep and replay walk published rows by created_at. Seed 000 deferred this
-- index (D-C); docs/adr/061-outbox-prune-index.md records why it ships from the start.
create index event_outbox_prune on event_outbox (created_at) where published_at is not null;

-- Parked rows are few; the gauge and redrive find them without a scan.
create index event_outbox_parked on event_outbox (id) where parked_at is not null;

-- Every row is inserted, updated once (published_at: never HOT, the partial indexes' predicates
-- change) and deleted a window later, so dead tuples arrive at twice the insert rate. The
-- default 20 % scale factor lets days of them pile up before the space is reused
-- (docs/adr/061-outbox-prune-index.md).
alter table event_outbox set (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.02
);
