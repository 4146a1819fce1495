-- One cleanup step as one statement (seed 004 "Lifecycle and completion"): the source-table
-- lock, the coordinator lock, the job row, the gate locks, the bounded compare-and-delete, the
-- counters, the cursor and the step record all happen in the caller's single transaction, in
-- one round trip. Called by `step()` in src/step.ts; see that file for the contract.
--
-- Refusals:
--   CRJ01 job_not_found
--   CRJ02 job_state_conflict  (detail: state, operation, expectedStep)

create function cleanup_step(p_job_id bigint, p_step_no integer, p_budget integer, p_window integer)
returns jsonb
language plpgsql as $$
declare
  j cleanup_jobs%rowtype;
  rec cleanup_steps%rowtype;
  v_server integer;
  t_start timestamptz := clock_timestamp();
  t_mark timestamptz;
  ms_lock double precision := 0;
  ms_discover double precision := 0;
  ms_fence double precision := 0;
  ms_delete double precision := 0;
  -- Outcome of the phase.
  v_lib bigint;
  v_cursor bigint;
  v_walked bigint := 0;
  v_visited integer := 0;
  v_kept integer := 0;
  v_deleted integer := 0;
  v_moved integer := 0;
  v_absent integer := 0;
  v_retained integer := 0;
  v_libs_removed integer := 0;
  v_servers_removed integer := 0;
  v_cursor_lib bigint;
  v_cursor_item bigint := 0;
  v_phase_after text;
  v_state_after text := 'deleting';
  v_pass_after integer;
  v_high_water bigint;
  -- Discovery.
  v_ids bigint[];
  v_revs text[];
  v_last_rn bigint;
  v_window_rows bigint;
  v_window_max bigint;
  v_exhausted boolean;
  v_deleted_ids bigint[];
  v_remaining boolean;
begin
  if p_budget < 1 or p_budget > 128 or p_window < p_budget or p_window > 4096 then
    raise exception 'cleanup_step: budget % / window % out of bounds', p_budget, p_window using errcode = '22023';
  end if;
  -- Waits for a lock are bounded; gate locks do not wait at all (NOWAIT).
  perform set_config('lock_timeout', '2s', true);

  select server_id into v_server from cleanup_jobs where id = p_job_id;
  if not found then
    raise exception using errcode = 'CRJ01', message = format('cleanup job %s does not exist', p_job_id),
      detail = jsonb_build_object('jobId', p_job_id)::text;
  end if;
  -- Lock order: source table, coordinator, job row (then server and libraries, in the phase).
  lock table items in row exclusive mode;
  perform cleanup_lock_coordinator(v_server);
  select * into j from cleanup_jobs where id = p_job_id for update;

  if p_step_no <= j.steps_done then
    -- A replay: the recorded result, nothing deleted.
    select * into rec from cleanup_steps where job_id = p_job_id and step_no = p_step_no;
    if not found then
      raise exception using errcode = 'CRJ02', message = format('job %s (%s): step %s completed, but its record has been removed by the history sweep', p_job_id, j.state, p_step_no),
        detail = jsonb_build_object('jobId', p_job_id, 'state', j.state, 'operation', 'step')::text;
    end if;
    return jsonb_build_object('step', to_jsonb(rec), 'replayed', true);
  end if;
  if p_step_no <> j.steps_done + 1 then
    raise exception using errcode = 'CRJ02', message = format('job %s (%s): step %s is out of order: the next step is %s', p_job_id, j.state, p_step_no, j.steps_done + 1),
      detail = jsonb_build_object('jobId', p_job_id, 'state', j.state, 'operation', 'step', 'expectedStep', j.steps_done + 1)::text;
  end if;
  if j.state <> 'deleting' then
    raise exception using errcode = 'CRJ02',
      message = format('job %s (%s): %s', p_job_id, j.state,
        case when j.state = 'collecting' then 'still collecting: a partial traversal cannot start deletion; seal the manifest first' else 'the job has finished' end),
      detail = jsonb_build_object('jobId', p_job_id, 'state', j.state, 'operation', 'step', 'expectedStep', j.steps_done + 1)::text;
  end if;

  v_phase_after := j.phase;
  v_pass_after := j.pass;
  v_high_water := j.high_water_id;
  v_lib := j.cursor_library_id;
  v_cursor_lib := j.cursor_library_id;
  t_mark := clock_timestamp();
  ms_lock := extract(epoch from t_mark - t_start) * 1000;

  if j.phase = 'items' then
    v_cursor := j.cursor_item_id;
    if v_lib is null then
      -- A remove-server job starts (and restarts a pass) at its server's first library.
      select id into v_lib from libraries where server_id = j.server_id order by id limit 1;
      v_cursor := 0;
    end if;
    if v_lib is null then
      v_phase_after := 'verify';
      v_cursor_lib := null;
    else
      -- Discovery: walk the library from the cursor in id order up to the high-water id. A prune
      -- job reads at most p_window rows and takes the first p_budget unseen ones; the scan is
      -- pulled lazily, so it stops as soon as the budget is met.
      if j.kind = 'prune-library' then
        select coalesce(array_agg(c.id order by c.id), '{}'), coalesce(array_agg(c.rev order by c.id), '{}'), max(c.rn)
          into v_ids, v_revs, v_last_rn
        from (
          select w.id, w.rev, w.rn
          from (
            select i.id, i.xmin::text as rev, i.external_id, row_number() over (order by i.id) as rn
            from items i
            where i.library_id = v_lib and i.id > v_cursor and i.id <= j.high_water_id
            order by i.id
            limit p_window
          ) w
          left join lateral (
            select true as seen from cleanup_manifest m where m.job_id = p_job_id and m.external_id = w.external_id limit 1
          ) s on true
          where s.seen is null
          order by w.id
          limit p_budget
        ) c;
      else
        select coalesce(array_agg(c.id order by c.id), '{}'), coalesce(array_agg(c.rev order by c.id), '{}'), count(*)
          into v_ids, v_revs, v_last_rn
        from (
          select i.id, i.xmin::text as rev
          from items i
          where i.library_id = v_lib and i.id > v_cursor and i.id <= j.high_water_id
          order by i.id
          limit p_budget
        ) c;
      end if;
      v_visited := cardinality(v_ids);
      if v_visited = p_budget then
        -- The budget was met: the walk stops at the last candidate.
        v_walked := v_ids[v_visited];
        v_kept := v_last_rn - v_visited;
        v_exhausted := false;
      else
        -- Fewer candidates than the budget: the whole window was read.
        select count(*), max(w.id) into v_window_rows, v_window_max
        from (select i.id from items i where i.library_id = v_lib and i.id > v_cursor and i.id <= j.high_water_id order by i.id limit p_window) w;
        v_walked := coalesce(v_window_max, v_cursor);
        v_kept := v_window_rows - v_visited;
        v_exhausted := v_window_rows < p_window;
      end if;
      ms_discover := extract(epoch from clock_timestamp() - t_mark) * 1000;
      t_mark := clock_timestamp();

      -- Gate locks in order: the server (a remove-server job owns it), then the library.
      if j.kind = 'remove-server' then
        perform 1 from servers where id = j.server_id for update nowait;
      end if;
      perform 1 from libraries where id = v_lib for update nowait;
      ms_fence := extract(epoch from clock_timestamp() - t_mark) * 1000;
      t_mark := clock_timestamp();

      if v_visited > 0 then
        -- Delete exactly the candidates whose id, membership and xmin are still what discovery
        -- saw. A row changed since (committed before this statement, or while it waited on the
        -- row) is re-checked at its newest version by the delete itself and survives.
        with d as (
          select * from unnest(v_ids, v_revs) as d(id, rev)
        ), del as (
          delete from items i using d
          where i.id = d.id and i.library_id = v_lib and i.xmin::text = d.rev
          returning i.id
        )
        select coalesce(array_agg(id), '{}') into v_deleted_ids from del;
        v_deleted := cardinality(v_deleted_ids);
        if v_deleted < v_visited then
          -- The survivors, classified as they are now: gone, moved to another library, or
          -- rewritten in place (retained for another pass).
          select count(*) filter (where i.id is null),
                 count(*) filter (where i.library_id <> v_lib),
                 count(*) filter (where i.library_id = v_lib)
            into v_absent, v_moved, v_retained
          from unnest(v_ids) as c(id)
          left join items i on i.id = c.id
          where c.id <> all(v_deleted_ids);
        end if;
      end if;
      ms_delete := extract(epoch from clock_timestamp() - t_mark) * 1000;

      v_cursor_lib := v_lib;
      v_cursor_item := v_walked;
      if v_exhausted then
        v_cursor_item := 0;
        if j.kind = 'remove-server' then
          select id into v_cursor_lib from libraries where server_id = j.server_id and id > v_lib order by id limit 1;
          if v_cursor_lib is null then v_phase_after := 'verify'; end if;
        else
          v_phase_after := 'verify';
        end if;
      end if;
    end if;

  elsif j.phase = 'verify' then
    -- The final absence check, with admission still closed.
    v_lib := j.library_id;
    if j.kind = 'remove-server' then
      perform 1 from servers where id = j.server_id for update nowait;
    else
      perform 1 from libraries where id = v_lib for update nowait;
    end if;
    ms_fence := extract(epoch from clock_timestamp() - t_mark) * 1000;
    t_mark := clock_timestamp();
    if j.kind = 'prune-library' then
      v_remaining := exists (
        select 1 from items i
        where i.library_id = v_lib
          and not exists (select 1 from cleanup_manifest m where m.job_id = p_job_id and m.external_id = i.external_id));
    elsif j.kind = 'remove-library' then
      v_remaining := exists (select 1 from items where library_id = v_lib);
    else
      v_remaining := exists (select 1 from items where server_id = j.server_id);
    end if;
    if v_remaining then
      -- A retained revision is still there (or a row written behind the triggers): another
      -- pass, up to the current high-water id so that nothing in scope is out of its reach.
      v_phase_after := 'items';
      v_pass_after := j.pass + 1;
      select greatest(j.high_water_id, coalesce(max(id), 0)) into v_high_water from items;
      v_cursor_lib := case when j.kind = 'remove-server' then null else v_lib end;
    elsif j.kind = 'prune-library' then
      -- Admission reopens only after the check passed, in the same transaction.
      update libraries set admission = 'open', cleanup_job_id = null, updated_at = now() where id = v_lib;
      v_phase_after := 'done';
      v_state_after := 'completed';
    elsif j.kind = 'remove-library' then
      v_phase_after := 'library';
    else
      v_phase_after := 'libraries';
    end if;
    ms_delete := extract(epoch from clock_timestamp() - t_mark) * 1000;

  elsif j.phase = 'library' then
    -- remove-library: the verified-empty library goes (its guard checks the same again).
    v_lib := j.library_id;
    perform 1 from libraries where id = v_lib for update nowait;
    ms_fence := extract(epoch from clock_timestamp() - t_mark) * 1000;
    t_mark := clock_timestamp();
    if exists (select 1 from items where library_id = v_lib) then
      v_phase_after := 'items';
      v_pass_after := j.pass + 1;
    else
      delete from libraries where id = v_lib;
      get diagnostics v_libs_removed = row_count;
      v_phase_after := 'done';
      v_state_after := 'completed';
    end if;
    ms_delete := extract(epoch from clock_timestamp() - t_mark) * 1000;

  elsif j.phase = 'libraries' then
    -- remove-server: one empty library per step, lowest id first.
    perform 1 from servers where id = j.server_id for update nowait;
    select id into v_lib from libraries where server_id = j.server_id order by id limit 1 for update nowait;
    ms_fence := extract(epoch from clock_timestamp() - t_mark) * 1000;
    t_mark := clock_timestamp();
    v_cursor_lib := null;
    if v_lib is null then
      v_phase_after := 'server';
    elsif exists (select 1 from items where library_id = v_lib) then
      v_phase_after := 'items';
      v_pass_after := j.pass + 1;
    else
      delete from libraries where id = v_lib;
      get diagnostics v_libs_removed = row_count;
      if not exists (select 1 from libraries where server_id = j.server_id) then
        v_phase_after := 'server';
      end if;
    end if;
    ms_delete := extract(epoch from clock_timestamp() - t_mark) * 1000;

  elsif j.phase = 'server' then
    perform 1 from servers where id = j.server_id for update nowait;
    ms_fence := extract(epoch from clock_timestamp() - t_mark) * 1000;
    t_mark := clock_timestamp();
    v_cursor_lib := null;
    if exists (select 1 from libraries where server_id = j.server_id) then
      v_phase_after := 'libraries';
    else
      delete from servers where id = j.server_id;
      get diagnostics v_servers_removed = row_count;
      v_phase_after := 'done';
      v_state_after := 'completed';
    end if;
    ms_delete := extract(epoch from clock_timestamp() - t_mark) * 1000;

  else
    raise exception using errcode = 'CRJ02', message = format('job %s (%s): nothing to step in phase %s', p_job_id, j.state, j.phase),
      detail = jsonb_build_object('jobId', p_job_id, 'state', j.state, 'operation', 'step')::text;
  end if;

  -- Counters, cursor and the step record commit with the rows.
  t_mark := clock_timestamp();
  update cleanup_jobs set
    steps_done = p_step_no,
    state = v_state_after,
    phase = v_phase_after,
    pass = v_pass_after,
    high_water_id = v_high_water,
    cursor_library_id = v_cursor_lib,
    cursor_item_id = v_cursor_item,
    visited = visited + v_visited,
    kept = kept + v_kept,
    deleted = deleted + v_deleted,
    moved = moved + v_moved,
    already_absent = already_absent + v_absent,
    retained = retained + v_retained,
    libraries_removed = libraries_removed + v_libs_removed,
    servers_removed = servers_removed + v_servers_removed,
    finished_at = case when v_state_after = 'completed' then now() end,
    updated_at = now()
  where id = p_job_id;
  insert into cleanup_steps (job_id, step_no, phase, pass, library_id, visited, kept, deleted, moved, already_absent, retained,
                             libraries_removed, servers_removed, cursor_item_id, state_after, phase_after)
  values (p_job_id, p_step_no, j.phase, j.pass, v_lib, v_visited, v_kept, v_deleted, v_moved, v_absent, v_retained,
          v_libs_removed, v_servers_removed, v_walked, v_state_after, v_phase_after)
  returning * into rec;

  return jsonb_build_object(
    'step', to_jsonb(rec),
    'replayed', false,
    'timings', jsonb_build_object(
      'lockMs', ms_lock, 'discoverMs', ms_discover, 'fenceMs', ms_fence, 'deleteMs', ms_delete,
      'recordMs', extract(epoch from clock_timestamp() - t_mark) * 1000,
      'functionMs', extract(epoch from clock_timestamp() - t_start) * 1000));
end
$$;
