-- The exchange service: one send job per opened case (delivery to an external destination) and
-- one SSA screening run per opened case, with its members (the people screened) and one
-- transport handoff per matched member. All written first by the `exchange.cases` consumer in
-- the inbox transaction of `case.opened`, then moved on by the worker.
--
-- Retention (docs/adr/058-retention.md):
--   exchange_send_jobs: class 1, the service-local terminal-state sweep (SEND_JOB_RETENTION_DAYS
--     after finished_at; queued and sending jobs are never swept).
--   ssa_transport_handoffs → ssa_screening_members → ssa_screening_runs: class 2,
--     archive-then-prune in that FK deletion order past ARCHIVE_HOT_WINDOW_DAYS (≥ 365).

create table exchange_send_jobs (
  id bigserial primary key,
  case_id text not null,
  destination text not null,
  status text not null default 'queued' check (status in ('queued', 'sending', 'sent', 'failed', 'cancelled')),
  attempts integer not null default 0 check (attempts >= 0),
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  -- A job is terminal exactly when it has finished: the sweep's window is measured on
  -- finished_at, so a terminal job without one could never be swept, and a live one with one
  -- could be.
  constraint exchange_send_jobs_finished check ((status in ('sent', 'failed', 'cancelled')) = (finished_at is not null))
);

-- The sweep walks terminal jobs by finished_at (its keyset cursor); live jobs are not in it.
create index exchange_send_jobs_sweep on exchange_send_jobs (finished_at) where status in ('sent', 'failed', 'cancelled');
-- The worker picks live jobs oldest first.
create index exchange_send_jobs_live on exchange_send_jobs (id) where status in ('queued', 'sending');
-- GET /v1/send-jobs?status=: newest first within one status.
create index exchange_send_jobs_status on exchange_send_jobs (status, id);

-- One SSA screening of the people of a case. `as_of` is the date the screening's data is as
-- of; a completed run is quiescent SCREENING_FRESHNESS_MONTHS (12) after it, and only then at
-- its archive fixpoint (completed AND past the horizon).
--
-- invalidated_at may stamp a COMPLETED run (the fixpoint does not read it): the only writer
-- (POST /v1/screenings/:id/invalidate) carries the spec's notAtFixpoint refusal in its WHERE,
-- so a run past the horizon can never change under the archive (precondition 4).
create table ssa_screening_runs (
  id bigserial primary key,
  case_id text not null,
  status text not null default 'running' check (status in ('running', 'completed', 'failed')),
  as_of date not null default current_date,
  created_at timestamptz not null default now(),
  completed_at timestamptz,
  invalidated_at timestamptz,
  constraint ssa_screening_runs_completed check ((status in ('completed', 'failed')) = (completed_at is not null))
);

create index ssa_screening_runs_created_at on ssa_screening_runs (created_at);
create index ssa_screening_runs_running on ssa_screening_runs (id) where status = 'running';

-- One person screened by a run. Terminal statuses (matched, cleared, error) are the archive
-- fixpoint; the worker's only update moves `pending` to one of them, with completed_at, and
-- never leaves one (its WHERE requires `pending`).
create table ssa_screening_members (
  id bigserial primary key,
  run_id bigint not null references ssa_screening_runs (id),
  person_ref text not null,
  status text not null default 'pending' check (status in ('pending', 'matched', 'cleared', 'error')),
  created_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint ssa_screening_members_completed check ((status in ('matched', 'cleared', 'error')) = (completed_at is not null))
);

-- The runs' archive guard (NOT EXISTS … where run_id = runs.id) and the worker's per-run reads.
create index ssa_screening_members_run_id on ssa_screening_members (run_id);
create index ssa_screening_members_created_at on ssa_screening_members (created_at);
create index ssa_screening_members_pending on ssa_screening_members (run_id) where status = 'pending';

-- What was handed to the SSA transport for a matched member. INSERT-ONLY (at its fixpoint from
-- birth): no designed write path updates a row.
create table ssa_transport_handoffs (
  id bigserial primary key,
  member_id bigint not null references ssa_screening_members (id),
  payload jsonb not null,
  created_at timestamptz not null default now(),
  -- One handoff per matched member; its index also serves the members' archive guard
  -- (NOT EXISTS … where member_id = members.id).
  constraint ssa_transport_handoffs_once unique (member_id)
);

create index ssa_transport_handoffs_created_at on ssa_transport_handoffs (created_at);
