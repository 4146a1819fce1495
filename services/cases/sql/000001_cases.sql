-- The cases service's own table (set `cases`, after `mq`). Each open and close stages its event
-- (`case.opened`, `case.closed`) in the same transaction as the row change.
create table cases (
  id uuid primary key default gen_random_uuid(),
  subject text not null,
  opened_at timestamptz not null default now(),
  closed_at timestamptz,
  constraint cases_subject_length check (char_length(subject) between 1 and 200),
  constraint cases_closed_after_opened check (closed_at is null or closed_at >= opened_at)
);

-- GET /v1/cases?status=open walks open cases oldest first.
create index cases_open_by_opened_at on cases (opened_at, id) where closed_at is null;
