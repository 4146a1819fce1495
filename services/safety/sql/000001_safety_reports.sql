-- The safety service's own table (set `safety`, after `mq` and `case_refs`). A report is filed
-- only for a case this service heard of (`case_refs`); filing stages `safety.reported` in the
-- same transaction.
create table safety_reports (
  id uuid primary key default gen_random_uuid(),
  case_id uuid not null references case_refs (case_id),
  severity text not null,
  summary text not null,
  reported_at timestamptz not null default now(),
  constraint safety_reports_severity_known check (severity in ('low', 'medium', 'high')),
  constraint safety_reports_summary_length check (char_length(summary) between 1 and 2000)
);

-- GET /v1/safety-reports?caseId= lists a case's reports oldest first.
create index safety_reports_by_case on safety_reports (case_id, reported_at, id);
create index safety_reports_by_time on safety_reports (reported_at, id);
