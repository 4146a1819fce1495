-- Rule sets are versioned snapshots: a change is a new version, never an edit, so every
-- evaluation names exactly the rules that decided it (pin resolution, dispute replay).
--
-- Retention: NONE by design (seed 003). Snapshots and promotion previews are audit-class but
-- grow at the rate of human admin changes × KB-scale content, and pin resolution and dispute
-- replay need them hot. They are insert-only, so they would meet the archive preconditions if
-- that call is ever revisited. rule_evaluations references them: an archived evaluation's
-- snapshot stays hot, so the archive needs no guard on these tables.
create table rule_set_snapshots (
  id bigserial primary key,
  rule_set text not null check (rule_set ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  version integer not null check (version >= 1),
  -- The validated rule array (src/rule-language.ts: at most 256 KiB as compact JSON); bounded
  -- here too, whoever writes it (jsonb's text form is at most about twice the compact one).
  rules jsonb not null check (jsonb_typeof(rules) = 'array' and jsonb_array_length(rules) <= 200 and octet_length(rules::text) <= 1048576),
  created_at timestamptz not null default now(),
  created_by text not null check (length(created_by) between 1 and 100),
  constraint rule_set_snapshots_version unique (rule_set, version)
);

-- A stored comparison of a candidate snapshot against the snapshot it follows, over the inputs
-- of recent evaluations.
create table rule_set_promotion_previews (
  id bigserial primary key,
  snapshot_id bigint not null references rule_set_snapshots (id),
  compared_to_snapshot_id bigint references rule_set_snapshots (id),
  summary jsonb not null check (jsonb_typeof(summary) = 'object' and octet_length(summary::text) <= 65536),
  created_at timestamptz not null default now()
);

create index rule_set_promotion_previews_snapshot on rule_set_promotion_previews (snapshot_id, created_at);

-- Both tables are insert-only, enforced by the database: no code path may rewrite what an
-- evaluation or a dispute points at.
create function rules_refuse_change() returns trigger language plpgsql as $$
begin
  raise exception '% is insert-only: % refused', tg_table_name, tg_op using errcode = 'P0001';
end;
$$;

create trigger rule_set_snapshots_insert_only
  before update or delete on rule_set_snapshots
  for each row execute function rules_refuse_change();

create trigger rule_set_promotion_previews_insert_only
  before update or delete on rule_set_promotion_previews
  for each row execute function rules_refuse_change();

-- One row per event the consumer `rules.evaluate` evaluated, written in the inbox transaction
-- (a redelivered or replayed event writes nothing).
--
-- Retention (seed 003): archive-then-prune past ARCHIVE_HOT_WINDOW_DAYS by `evaluated_at`.
-- INSERT-ONLY (README, precondition 1): an UPDATE is refused by the trigger below; DELETE stays
-- open for the archive engine alone. Nothing may reference this table (no foreign key into it),
-- so no guard is needed; its own reference to a snapshot points at a table that stays hot.
create table rule_evaluations (
  id bigserial primary key,
  -- The evaluated event (its envelope's id and type).
  event_id uuid not null,
  event_type text not null,
  snapshot_id bigint not null references rule_set_snapshots (id),
  outcome text not null check (outcome in ('pass', 'flag', 'block')),
  -- Names of the rules that matched, in rule order.
  matched_rules text[] not null default '{}',
  -- The event's payload as evaluated, taken from the message body by the database.
  input jsonb not null,
  evaluated_at timestamptz not null default now()
);

-- The archive select walks rows past the hot window; GET /v1/evaluations?since= reads by time.
create index rule_evaluations_evaluated_at on rule_evaluations (evaluated_at);
-- GET /v1/evaluations?eventType=… and ?outcome=…: newest first within one value.
create index rule_evaluations_event_type on rule_evaluations (event_type, evaluated_at);
create index rule_evaluations_outcome on rule_evaluations (outcome, evaluated_at);
-- The foreign key's referencing side, so the snapshots' referenced rows are checked by index.
create index rule_evaluations_snapshot on rule_evaluations (snapshot_id);

create trigger rule_evaluations_insert_only
  before update on rule_evaluations
  for each row execute function rules_refuse_change();

-- Insert-only rows and an archive delete a window later: the default 20 % scale factor would
-- leave a large table's dead tuples unvacuumed for days.
alter table rule_evaluations set (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05);

-- The active rule set is the latest snapshot of `default`; version 1 ships with the schema so
-- the consumer always has one.
insert into rule_set_snapshots (rule_set, version, rules, created_by)
values ('default', 1, '[
  {"name": "safety-high-severity", "when": {"eventType": "safety.reported", "field": "severity", "op": "in", "value": ["high", "critical"]}, "outcome": "flag"},
  {"name": "placement-on-closed-case", "when": {"eventType": "placement.*", "field": "caseStatus", "op": "eq", "value": "closed"}, "outcome": "block"},
  {"name": "case-without-caseworker", "when": {"eventType": "case.opened", "field": "caseworkerId", "op": "exists", "value": false}, "outcome": "flag"}
]'::jsonb, 'migration');
