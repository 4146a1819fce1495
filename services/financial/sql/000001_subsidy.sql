-- Subsidy imports: one row per file a funder sends for a source and a month, with its lines.
-- Written in one transaction with the matching it does (an import that fails leaves nothing).
-- Not swept: imports are the financial record.
create table subsidy_imports (
  id bigserial primary key,
  -- Who sent it (a funder or an agency feed).
  source text not null check (length(source) between 1 and 200),
  -- The month the import covers: the first day of that month.
  period date not null check (extract(day from period) = 1),
  status text not null default 'importing' check (status in ('importing', 'completed', 'failed')),
  row_count integer not null check (row_count >= 0),
  matched_count integer not null default 0 check (matched_count between 0 and row_count),
  imported_at timestamptz not null default now(),
  completed_at timestamptz,
  check ((status = 'completed') = (completed_at is not null)),
  -- One import per source and month: a file sent twice is refused, not matched twice.
  unique (source, period)
);

create table subsidy_import_lines (
  import_id bigint not null references subsidy_imports (id),
  -- 1-based position in the request's `lines`.
  line_no integer not null check (line_no >= 1),
  placement_id text not null check (length(placement_id) between 1 and 200),
  amount numeric(14, 2) not null check (amount >= 0),
  -- Whether the line found a pending queue row (the row carries import_id and import_line).
  matched boolean not null default false,
  primary key (import_id, line_no)
);

-- One row per placement start or end the service consumed (`placement.*`, consumer
-- `financial.placements`), written in the inbox transaction; `event_id` makes a replay that
-- outlived its inbox record write nothing too.
--
-- Lifecycle: pending → matched (an import line for the placement) → settled. `settled` is
-- TERMINAL: no designed write path changes a settled row (every update says
-- `where status <> 'settled'`, and the trigger below refuses one that does not). Settled rows
-- are swept RECONCILE_SETTLED_RETENTION_DAYS after `settled_at` (docs/adr/058-retention.md,
-- class 1, service-local terminal-state sweep); pending, matched and failed rows never are.
create table subsidy_reconcile_queue (
  id bigserial primary key,
  event_id uuid not null unique,
  placement_id text not null check (length(placement_id) between 1 and 200),
  case_id text,
  kind text not null check (kind in ('placement_started', 'placement_ended')),
  amount numeric(14, 2) check (amount >= 0),
  status text not null default 'pending' check (status in ('pending', 'matched', 'settled', 'failed')),
  import_id bigint references subsidy_imports (id),
  import_line integer,
  enqueued_at timestamptz not null default now(),
  matched_at timestamptz,
  settled_at timestamptz,
  check ((status = 'settled') = (settled_at is not null)),
  check (settled_at >= enqueued_at),
  -- Matched and settled rows carry what matched them; pending ones carry nothing yet.
  check ((status in ('matched', 'settled')) = (matched_at is not null and import_id is not null and amount is not null)),
  check (matched_at >= enqueued_at and settled_at >= matched_at)
);

-- The sweep walks settled rows by settled_at: only those rows are in the index.
create index subsidy_reconcile_queue_settled on subsidy_reconcile_queue (settled_at) where status = 'settled';
-- An import matches pending rows by placement.
create index subsidy_reconcile_queue_pending on subsidy_reconcile_queue (placement_id, enqueued_at) where status = 'pending';
-- Settlement takes matched rows oldest first.
create index subsidy_reconcile_queue_matched on subsidy_reconcile_queue (id) where status = 'matched';
-- GET /v1/reconcile-queue?status=…
create index subsidy_reconcile_queue_status on subsidy_reconcile_queue (status, id);

-- Settled is terminal, in the database and not only in the code: an update of a settled row is
-- refused (deleting it is the sweep's job and stays allowed).
create function subsidy_reconcile_queue_settled_is_terminal() returns trigger
language plpgsql as $$
begin
  raise exception 'subsidy_reconcile_queue row % is settled: a settled row is never changed', old.id
    using errcode = 'integrity_constraint_violation', constraint = 'subsidy_reconcile_queue_settled_is_terminal';
end
$$;

create trigger subsidy_reconcile_queue_settled_is_terminal
  before update on subsidy_reconcile_queue
  for each row when (old.status = 'settled')
  execute function subsidy_reconcile_queue_settled_is_terminal();
