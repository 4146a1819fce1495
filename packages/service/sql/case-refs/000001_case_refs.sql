-- A consumer's local view of the cases it heard of through `case.*` events (set `case_refs`,
-- applied by placements and safety after `mq`). Written only by the inbox handler, in the same
-- transaction as the dedup insert; read by writes that must refuse an unknown or closed case.
--
-- The status only moves open → closed: a `case.closed` that arrives before its `case.opened`
-- (the transports do not order across retries) still leaves the case closed.
create table case_refs (
  case_id uuid primary key,
  status text not null check (status in ('open', 'closed')),
  updated_at timestamptz not null default now()
);
