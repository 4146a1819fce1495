-- Several bounded steps in one transaction (ADR-060, "Step windows"): a round trip and a commit
-- cost more than a 128-row step's deletes on a loaded machine, so a window runs up to
-- p_max_steps steps of one job back to back, stopping early when the job finishes or after
-- p_max_ms, and commits them together. Each step is still cleanup_step, unchanged: at most 128
-- rows, its own revision checks, counters, cursor and record. The window only widens the
-- transaction, so it is atomic too: a failure in any of its steps (NOWAIT contention, a lock
-- timeout) rolls back the whole window and nothing of it is recorded; replaying a committed
-- window returns each step's recorded result (cleanup_step's replay), deleting nothing again.
--
-- Refusals: 22023 (bounds), and every refusal of cleanup_step.

create function cleanup_step_window(p_job_id bigint, p_first_step integer, p_max_steps integer, p_max_ms integer, p_budget integer, p_window integer)
returns jsonb
language plpgsql as $$
declare
  t_start timestamptz := clock_timestamp();
  v_steps jsonb := '[]';
  v_step jsonb;
  v_no integer := p_first_step;
begin
  if p_max_steps < 1 or p_max_steps > 64 or p_max_ms < 1 or p_max_ms > 1000 then
    raise exception 'cleanup_step_window: % steps / % ms out of bounds (1..64, 1..1000)', p_max_steps, p_max_ms using errcode = '22023';
  end if;
  loop
    v_step := cleanup_step(p_job_id, v_no, p_budget, p_window);
    v_steps := v_steps || jsonb_build_array(v_step);
    exit when v_step->'step'->>'state_after' <> 'deleting';
    exit when v_no - p_first_step + 1 >= p_max_steps;
    exit when clock_timestamp() - t_start >= make_interval(secs => p_max_ms / 1000.0);
    v_no := v_no + 1;
  end loop;
  return jsonb_build_object('steps', v_steps, 'functionMs', extract(epoch from clock_timestamp() - t_start) * 1000);
end
$$;

-- Like the step (000006): executed by the runtime role only through its grant, never by PUBLIC.
-- The window runs as its caller; each step inside it is the SECURITY DEFINER cleanup_step.
revoke execute on function cleanup_step_window(bigint, integer, integer, integer, integer, integer) from public;
grant execute on function cleanup_step_window(bigint, integer, integer, integer, integer, integer) to craig_inventory_runtime;
