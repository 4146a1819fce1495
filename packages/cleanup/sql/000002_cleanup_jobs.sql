-- Durable cleanup jobs (seed 004), their seen-ID manifests and their step records.
--
-- A job's children reference it without a cascade: the history sweep removes a finished job's
-- manifest and steps in bounded batches first and the job row last, so no delete here ever
-- cascades through an unbounded number of rows either.

create table cleanup_jobs (
  id bigint generated always as identity primary key,
  -- No foreign keys to the source tables: a job outlives the server or library it removed.
  server_id integer not null,
  library_id bigint,
  kind text not null check (kind in ('prune-library', 'remove-library', 'remove-server')),
  state text not null check (state in ('collecting', 'deleting', 'completed', 'cancelled')),
  -- collect → items ⇄ verify → (library | libraries → server) → done
  phase text not null check (phase in ('collect', 'items', 'verify', 'library', 'libraries', 'server', 'done')),
  cancel_reason text check (cancel_reason in ('requested', 'deadline')),
  expected_unique_count integer check (expected_unique_count >= 0),
  -- max(items.id) when admission closed: nothing in scope can have a larger id.
  high_water_id bigint,
  pass integer not null default 1,
  cursor_library_id bigint,
  cursor_item_id bigint not null default 0,
  steps_done integer not null default 0,
  visited bigint not null default 0,
  kept bigint not null default 0,
  deleted bigint not null default 0,
  moved bigint not null default 0,
  already_absent bigint not null default 0,
  retained bigint not null default 0,
  libraries_removed integer not null default 0,
  servers_removed integer not null default 0,
  created_at timestamptz not null default now(),
  collect_deadline_at timestamptz,
  sealed_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now(),
  check ((kind = 'remove-server') = (library_id is null)),
  check ((state in ('completed', 'cancelled')) = (finished_at is not null)),
  check ((state = 'cancelled') = (cancel_reason is not null)),
  check (state <> 'collecting' or collect_deadline_at is not null)
);
-- Jobs on one server are serialized, collecting ones included: the database refuses a second.
create unique index cleanup_jobs_one_active_per_server on cleanup_jobs (server_id) where state in ('collecting', 'deleting');
create index cleanup_jobs_runnable on cleanup_jobs (id) where state = 'deleting';
create index cleanup_jobs_collecting on cleanup_jobs (collect_deadline_at) where state = 'collecting';
create index cleanup_jobs_finished on cleanup_jobs (finished_at) where state in ('completed', 'cancelled');

create table cleanup_manifest (
  job_id bigint not null references cleanup_jobs (id),
  external_id text not null
    check (external_id ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$'),
  primary key (job_id, external_id)
);

create table cleanup_steps (
  job_id bigint not null references cleanup_jobs (id),
  step_no integer not null check (step_no >= 1),
  phase text not null,
  pass integer not null,
  library_id bigint,
  visited integer not null,
  kept integer not null,
  deleted integer not null,
  moved integer not null,
  already_absent integer not null,
  retained integer not null,
  libraries_removed integer not null,
  servers_removed integer not null,
  cursor_item_id bigint not null,
  -- The job's state and phase after this step.
  state_after text not null,
  phase_after text not null,
  created_at timestamptz not null default now(),
  primary key (job_id, step_no)
);
