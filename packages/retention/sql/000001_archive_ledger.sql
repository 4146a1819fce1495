-- The archive ledger: one row per archive object whose rows were deleted from the hot table.
-- A row exists exactly when its batch's delete committed (same transaction), so the ledger is
-- the index of what lives only in the object store. Objects without a row are orphans (a
-- crash or a rolled-back batch after the write); `pnpm xtask archive-fetch --verify` lists them.
create table archive_ledger (
  archive_id  uuid primary key,
  table_name  text not null,
  object_key  text not null unique,
  sha256      text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  bytes       bigint not null check (bytes > 0),
  row_count   integer not null check (row_count > 0),
  min_key     text not null,
  max_key     text not null,
  min_ts      timestamptz not null,
  max_ts      timestamptz not null check (max_ts >= min_ts),
  created_at  timestamptz not null default now()
);

create index archive_ledger_table_ts on archive_ledger (table_name, min_ts, max_ts);

-- Purge is refused (D14): nothing may rewrite or remove what the archive vouches for.
create function archive_ledger_refuse_change() returns trigger language plpgsql as $$
begin
  raise exception 'archive_ledger is append-only: % refused (archives are never purged, D14)', tg_op
    using errcode = 'P0001';
end;
$$;

create trigger archive_ledger_append_only
  before update or delete on archive_ledger
  for each row execute function archive_ledger_refuse_change();

create trigger archive_ledger_no_truncate
  before truncate on archive_ledger
  for each statement execute function archive_ledger_refuse_change();
