-- A sweep that hit its per-cycle cap latches here and stops deleting from that table until an
-- operator resumes it (`pnpm xtask prune <service> --resume <table>`): a clock that jumped
-- ahead must not delete a million rows every hour. Kept in the database so a restart, another
-- replica or a redeploy sees the latch too (docs/runbooks/prune-cap-latched.md).
create table prune_latch (
  target text primary key,
  latched_at timestamptz not null default now(),
  -- What the capped cycle deleted and the cap it hit.
  deleted bigint not null,
  cap bigint not null
);
