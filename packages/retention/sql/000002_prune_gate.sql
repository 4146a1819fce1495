-- Refusals: 42501 (an unregistered table), 22023 (counts that do not match the ledger entry),
-- CRR01 archive_count_mismatch (detail: archived, deleted, exact): the registered predicate or
-- a row's (key, xmin) no longer matches every archived row.
--
-- The one way an archived table's rows are deleted (docs/adr/063-runtime-roles.md): the runtime
-- role holds no DELETE on them and no INSERT on the ledger; it calls archive_prune_batch, which
-- runs as the owner and, in the caller's transaction, records the batch in archive_ledger and
-- deletes exactly the archived row versions that are still eligible by the policy the owner
-- registered for the table, never a looser one the caller asks for.
--
-- archive_tables is that policy: one row per prunable table (its key, timestamp, fixpoint and
-- dependent guards, and the hot window in days), written by the owner from the service's
-- archive specs and settings after every migration run (registerArchiveSpecs), read by the
-- engine's check, never writable by the runtime role.
create table archive_tables (
  table_name text primary key,
  key_column text not null,
  timestamp_column text not null,
  -- The floor: a caller's shorter window is raised to it.
  hot_window_days integer not null check (hot_window_days >= 1),
  -- {"kind": "insert_only"} | {"kind": "terminal_status", "column", "values"} |
  -- {"kind": "terminal_quiescent", "column", "values", "since", "months"}
  fixpoint jsonb not null check (fixpoint->>'kind' in ('insert_only', 'terminal_status', 'terminal_quiescent')),
  -- [{"table", "column", "references"}]: no row goes while a dependent references it.
  guards jsonb not null default '[]' check (jsonb_typeof(guards) = 'array'),
  registered_at timestamptz not null default now()
);

-- SECURITY DEFINER with a pinned search_path: every name below is schema-qualified or built-in,
-- and pg_temp comes last, so nothing the caller creates can stand in for a table or function.
create function archive_prune_batch(
  p_archive_id uuid, p_table text, p_object_key text, p_sha256 text, p_bytes bigint, p_row_count integer,
  p_min_key text, p_max_key text, p_min_ts timestamptz, p_max_ts timestamptz,
  p_ctids tid[], p_keys text[], p_xmins text[], p_hot_window_days integer)
returns table (deleted integer, exact integer)
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  r public.archive_tables%rowtype;
  v_predicate text;
  v_guard jsonb;
  v_values text[];
  v_deleted integer;
  v_exact integer;
begin
  select * into r from public.archive_tables where table_name = p_table;
  if not found then
    raise exception using errcode = '42501', message = format('archive_prune_batch: table %s is not registered for archive pruning', p_table);
  end if;
  if p_row_count is null or p_row_count < 1 or cardinality(p_ctids) is distinct from p_row_count
     or cardinality(p_keys) is distinct from p_row_count or cardinality(p_xmins) is distinct from p_row_count then
    raise exception using errcode = '22023', message = format('archive_prune_batch: %s rows in the ledger entry, %s ctids, %s keys, %s xmins',
      p_row_count, cardinality(p_ctids), cardinality(p_keys), cardinality(p_xmins));
  end if;

  -- The ledger row first: its primary key makes one archive id one batch, ever.
  insert into public.archive_ledger (archive_id, table_name, object_key, sha256, bytes, row_count, min_key, max_key, min_ts, max_ts)
  values (p_archive_id, p_table, p_object_key, p_sha256, p_bytes, p_row_count, p_min_key, p_max_key, p_min_ts, p_max_ts);

  -- The registered eligibility, as the engine's select evaluates it: fixpoint, hot window, guards.
  v_values := array(select jsonb_array_elements_text(coalesce(r.fixpoint->'values', '[]')));
  v_predicate := case r.fixpoint->>'kind'
    when 'insert_only' then 'true'
    when 'terminal_status' then format('t.%I = any($4)', r.fixpoint->>'column')
    else format('(t.%I = any($4) and t.%I < now() - make_interval(months => $5))', r.fixpoint->>'column', r.fixpoint->>'since')
  end;
  v_predicate := v_predicate || format(' and t.%I < now() - make_interval(days => $6)', r.timestamp_column);
  for v_guard in select value from jsonb_array_elements(r.guards) loop
    v_predicate := v_predicate || format(' and not exists (select 1 from public.%I as d where d.%I = t.%I)',
      v_guard->>'table', v_guard->>'column', coalesce(v_guard->>'references', r.key_column));
  end loop;

  -- Exactly the archived row versions: reached by ctid, counted only where (key, xmin) is one
  -- the select archived. Anything else undoes the statement, ledger row included, whatever the
  -- caller does next: a ledger row exists exactly when its rows were deleted.
  execute format(
    'with d as (delete from public.%I as t where t.ctid = any($1) and %s returning t.%I::text as k, t.xmin::text as x)
     select count(*)::int, (count(*) filter (where (d.k, d.x) in (select * from unnest($2, $3))))::int from d',
    r.table_name, v_predicate, r.key_column)
  into v_deleted, v_exact
  using p_ctids, p_keys, p_xmins, v_values, (r.fixpoint->>'months')::integer, greatest(p_hot_window_days, r.hot_window_days);
  if v_deleted <> p_row_count or v_exact <> p_row_count then
    raise exception using errcode = 'CRR01',
      message = format('archive batch %s of %s: the delete matched %s of %s archived rows', p_archive_id, p_table, v_exact, p_row_count),
      detail = jsonb_build_object('code', 'archive_count_mismatch', 'archived', p_row_count, 'deleted', v_deleted, 'exact', v_exact)::text;
  end if;
  deleted := v_deleted;
  exact := v_exact;
  return next;
end
$$;

-- PUBLIC may execute any function by default; this one only the runtime role (its grants).
revoke execute on function archive_prune_batch(uuid, text, text, text, bigint, integer, text, text, timestamptz, timestamptz, tid[], text[], text[], integer) from public;
