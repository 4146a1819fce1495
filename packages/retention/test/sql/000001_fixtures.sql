-- Tables the retention tests archive. Not a platform migration: tests only.

-- Insert-only audit rows with every awkward type.
create table audit_events (
  id          bigserial primary key,
  occurred_at timestamptz not null default now(),
  actor       text not null,
  amount      numeric,
  big         bigint,
  payload     jsonb not null default '{}',
  note        text,
  tags        text[],
  raw         bytea,
  ratio       double precision
);
create index audit_events_occurred on audit_events (occurred_at);

-- Terminal-status rows, with a column a writer may still stamp (protected by a refusal).
create table jobs (
  id             uuid primary key,
  created_at     timestamptz not null,
  status         text not null check (status in ('open', 'running', 'done', 'failed')),
  finished_on    date,
  invalidated_at timestamptz,
  detail         text
);

-- A three-table FK chain: runs ← members ← handoffs (the exchange shape).
create table runs (
  id         bigint primary key,
  created_at timestamptz not null,
  status     text not null
);
create table members (
  id         bigint primary key,
  run_id     bigint not null references runs (id),
  created_at timestamptz not null,
  status     text not null
);
create table handoffs (
  id         uuid primary key,
  member_id  bigint not null references members (id),
  created_at timestamptz not null
);
-- A dependent without a foreign key (a soft reference): only the guard protects its parents.
create table notes (
  id       bigserial primary key,
  job_id   uuid not null,
  body     text
);
-- What a service's outbox hook writes in the ledger transaction.
create table announcements (
  archive_id uuid primary key,
  table_name text not null,
  row_count  integer not null
);
