-- Deliveries of each bus message, counted before its handler runs (docs/adr/062-delivery-limit.md).
-- A consumer that dies holding a message rolls its claim back, so `bus_deliveries.attempts`
-- (failed attempts, written in the claim transaction) never sees the death. This count is
-- written in autocommit on another connection after the claim and before the handler, so it
-- survives the death: `deliveries - attempts` is the number of hand-outs no consumer settled,
-- and past INBOX_MAX_DELIVERIES of them the message is dead-lettered instead of handed out.
create table bus_delivery_counts (
  -- Deleted with its delivery (acknowledged, or moved to bus_dead_letters) by the cascade, in
  -- that transaction. The claim locks bus_deliveries FOR NO KEY UPDATE, which the key-share
  -- lock of this foreign key's check does not wait for.
  delivery_id bigint primary key references bus_deliveries (id) on delete cascade,
  -- The delivery's consumer, so a consumer's unsettled deliveries are found from this small
  -- table rather than by walking its whole queue.
  consumer text not null,
  -- Times the message was handed to a handler, over all its attempts.
  deliveries integer not null check (deliveries > 0)
);

create index bus_delivery_counts_consumer on bus_delivery_counts (consumer, delivery_id);

-- Dead letters carry their delivery count. Letters from before the count: each attempt was a
-- delivery, so that is what is known of them.
alter table bus_dead_letters add column deliveries integer not null default 0;
update bus_dead_letters set deliveries = attempts;
alter table bus_dead_letters alter column deliveries drop default;

-- Rows come and go with the deliveries in flight: vacuum by dead-row count (as bus_deliveries).
alter table bus_delivery_counts set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 50000);
