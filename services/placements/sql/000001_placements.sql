-- The placements service's own table (set `placements`, after `mq` and `case_refs`). A
-- placement exists only for a case this service heard of (`case_refs`); starting one stages
-- `placement.started`, ending one (asked for, or because its case closed) `placement.ended`,
-- each in the same transaction as the row change.
create table placements (
  id uuid primary key default gen_random_uuid(),
  case_id uuid not null references case_refs (case_id),
  provider text not null,
  started_at timestamptz not null default now(),
  ended_at timestamptz,
  end_reason text,
  constraint placements_provider_length check (char_length(provider) between 1 and 200),
  constraint placements_ended_after_started check (ended_at is null or ended_at >= started_at),
  constraint placements_end_reason_known check (end_reason in ('requested', 'case_closed')),
  constraint placements_ended_has_reason check ((ended_at is null) = (end_reason is null))
);

-- A case.closed ends the case's active placements; GET ?caseId= lists a case's placements.
create index placements_by_case on placements (case_id, started_at, id);
create index placements_active on placements (started_at, id) where ended_at is null;
