-- What an inbox consumer last saw of each producer's dedup horizon (ADR-058): the producer's
-- windows, carried on every message as transport headers, against the consumer's own inbox
-- window. Upserted by the consumer at most once an hour per producer, and at once when the
-- verdict or a window changes, so `pnpm xtask invariants <service>` can say whether a peer
-- may replay events past this service's dedup records (red while the last observation of any
-- producer is a violation). A retired producer's row stays until an operator deletes it.
create table dedup_horizon_observations (
  consumer text not null,
  producer text not null,
  producer_outbox_days integer not null check (producer_outbox_days >= 0),
  -- Null when the producer did not send its inbox window (only needed when its outbox sweep is off).
  producer_inbox_days integer check (producer_inbox_days >= 0),
  consumer_inbox_days integer not null check (consumer_inbox_days >= 0),
  violated boolean not null,
  observed_at timestamptz not null default now(),
  primary key (consumer, producer)
);
