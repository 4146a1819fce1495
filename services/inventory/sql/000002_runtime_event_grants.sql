-- The runtime role also stages, drains, consumes and replays events: DML on the mq set's
-- tables (applied before this set). It owns none of them, so it cannot alter or truncate them.
grant select, insert, update, delete on event_outbox, event_inbox, prune_latch to craig_inventory_runtime;
grant usage on sequence event_outbox_id_seq to craig_inventory_runtime;
