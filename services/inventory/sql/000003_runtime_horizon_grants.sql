-- The mq set's dedup_horizon_observations (what an inbox consumer last saw of each producer's
-- windows) is written by the consumers, which run as the runtime role like everything else
-- here: DML on it, as on the other mq tables (000002).
grant select, insert, update, delete on dedup_horizon_observations to craig_inventory_runtime;
