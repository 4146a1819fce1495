-- The prune gate's delete as one join (docs/adr/066-archive-stream-and-join-gate.md): the same
-- function, signature, grants and refusals as 000002, a cheaper way to reach the same rows.
--
-- 000002 reached the archived rows by `ctid = any($1)` (a TID scan: one heap fetch, pin and lock
-- per row) and then counted the deleted rows whose (key, xmin) was archived with a second pass
-- over the returned rows. Measured on 22,000 rows of a 500,000-row audit table: 137 ms, where a
-- plain delete of the same key range takes 13 ms. Now the delete scans the batch's key range
-- (the primary key index, page by page), hash-joins it with the archived (ctid, key, xmin)
-- triples, and deletes only the rows that match all three and the registered predicate: 31 ms.
--
-- What it guarantees is unchanged or stricter: a row is deleted only when it is, at this moment,
-- exactly a version the select archived (same slot, same key, same xmin) and still eligible; a
-- row updated since, moved off its fixpoint, given a dependent, or a slot reused, is not
-- deleted at all (000002 deleted it and undid the statement), and the batch is refused with
-- CRR01 unless every archived row matched. `deleted` and `exact` are therefore the same count.
create or replace function archive_prune_batch(
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
  v_key_type text;
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
  -- The key's own type: the range and the join compare keys as that type (by its index), never
  -- as text, whose form would depend on the calling session's settings.
  select format_type(a.atttypid, a.atttypmod) into v_key_type
  from pg_catalog.pg_attribute as a
  where a.attrelid = to_regclass(format('public.%I', r.table_name)) and a.attname = r.key_column and a.attnum > 0 and not a.attisdropped;
  if v_key_type is null then
    raise exception using errcode = '42703', message = format('archive_prune_batch: %s.%s does not exist', r.table_name, r.key_column);
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

  -- Exactly the archived row versions: within the batch's key range, only a row whose slot, key
  -- and xmin are one archived triple is deleted. Fewer than the batch undoes the statement,
  -- ledger row included, whatever the caller does next: a ledger row exists exactly when its
  -- rows were deleted.
  execute format(
    'with d as (delete from public.%1$I as t using unnest($1, $2, $3) as a(c, k, x)
       where t.%2$I >= $7::%3$s and t.%2$I <= $8::%3$s
         and t.ctid = a.c and t.%2$I = a.k::%3$s and t.xmin = a.x::xid and %4$s
       returning 1)
     select count(*)::int from d',
    r.table_name, r.key_column, v_key_type, v_predicate)
  into v_exact
  using p_ctids, p_keys, p_xmins, v_values, (r.fixpoint->>'months')::integer, greatest(p_hot_window_days, r.hot_window_days), p_min_key, p_max_key;
  if v_exact <> p_row_count then
    raise exception using errcode = 'CRR01',
      message = format('archive batch %s of %s: the delete matched %s of %s archived rows', p_archive_id, p_table, v_exact, p_row_count),
      detail = jsonb_build_object('code', 'archive_count_mismatch', 'archived', p_row_count, 'deleted', v_exact, 'exact', v_exact)::text;
  end if;
  deleted := v_exact;
  exact := v_exact;
  return next;
end
$$;
