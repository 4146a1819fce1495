-- The inbox: one dedup record per (consumer, event), inserted in the same transaction as the
-- consumer's handler. A redelivered or replayed event finds its record and is skipped.
--
-- Retention (docs/adr/058-retention.md): records older than EVENT_INBOX_RETENTION_DAYS are
-- pruned. The window must exceed the outbox window by at least a day (the dedup horizon,
-- seed 000 §D3.1): a record must outlive every replayable outbox row that could redeliver it.
create table event_inbox (
  consumer text not null,
  event_id uuid not null,
  event_type text not null,
  received_at timestamptz not null default now(),
  primary key (consumer, event_id)
);

-- The sweep walks records by received_at.
create index event_inbox_received_at on event_inbox (received_at);

alter table event_inbox set (
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.02
);
