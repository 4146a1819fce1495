-- One row per event the security service saw on the transport (consumer `security.audit`,
-- bound to `#`), written in the inbox transaction: a redelivered or replayed event finds its
-- inbox record and writes nothing.
--
-- Retention (docs/adr/058-retention.md, class 2): archive-then-prune past ARCHIVE_HOT_WINDOW_DAYS
-- by `received_at`. The table is INSERT-ONLY: no designed write path updates a row (README,
-- precondition 1), so every row is at its fixpoint from birth.
create table audit_log (
  id bigserial primary key,
  event_id uuid not null,
  event_type text not null,
  aggregate_type text not null,
  aggregate_id text not null,
  -- The service whose outbox published the event (the envelope's `source`).
  source text not null,
  payload jsonb not null,
  headers jsonb not null default '{}'::jsonb,
  -- When the producer staged the event (the envelope's `occurredAt`).
  occurred_at timestamptz not null,
  received_at timestamptz not null default now()
);

-- The archive select walks rows past the hot window in id order; GET /v1/audit?since= reads by time.
create index audit_log_received_at on audit_log (received_at);
-- GET /v1/audit?eventType=…: newest first within one type.
create index audit_log_event_type on audit_log (event_type, received_at);

-- Insert-only rows and an archive delete a window later: the default 20 % scale factor would
-- leave a large table's dead tuples unvacuumed for days.
alter table audit_log set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05);

-- Every dead letter of the fleet as the dead-letter queue handed it to security (one queue per
-- transport: RabbitMQ's `<exchange>.dead-letter`, the bus's `bus_dead_letters`). Insert-only.
-- The dead-letter handler is at-least-once and not inbox-deduplicated (a dead letter has no
-- envelope guarantee), so the unique key makes a redelivered dead letter write nothing.
create table dead_letter_audit (
  id bigserial primary key,
  -- The consumer that gave up on the message.
  consumer text not null,
  -- The message id as the transport carried it, and as a UUID when it is one (a message that
  -- was not an envelope may carry anything).
  message_id text not null,
  event_id uuid,
  routing_key text not null,
  -- The handler's last error, and how many attempts were made.
  error text not null,
  attempts integer not null check (attempts >= 0),
  -- The raw message body, byte for byte: it may not be JSON at all.
  body text not null,
  headers jsonb not null default '{}'::jsonb,
  dead_lettered_at timestamptz not null,
  received_at timestamptz not null default now(),
  constraint dead_letter_audit_once unique (consumer, message_id, dead_lettered_at)
);

create index dead_letter_audit_received_at on dead_letter_audit (received_at);
