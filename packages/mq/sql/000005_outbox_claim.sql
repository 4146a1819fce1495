-- The drain's claim (docs/adr/068-byte-bounded-drain-claim.md): the oldest due pending rows,
-- locked FOR UPDATE SKIP LOCKED, at most p_limit of them and no more than it takes for their
-- payload and headers text to reach p_max_bytes. The rows come through a cursor fetched one at
-- a time, and a row is locked only when it is fetched, so a claim cut short by its byte budget
-- holds no lock beyond its last row: the next claim (another drain lane, another replica) takes
-- the rows right after it, in id order. (Cutting a `LIMIT n FOR UPDATE` claim afterwards would
-- leave the cut rows locked until commit, and the next lane would publish the rows behind them
-- first.) The row that reaches the budget is the last one taken, so a claim holds at most
-- p_max_bytes plus one row, and always at least one row when any is due.
--
-- past_horizon: a replayed row created before p_horizon (the replay horizon, NULL for none),
-- which the drain parks instead of publishing (docs/adr/058-retention.md). claimed_bytes: the
-- claim's payload and headers bytes up to and including this row, so the caller knows whether
-- the claim stopped at its budget (more rows may be due) or ran out of due rows.
--
-- Runs with its caller's rights: the runtime role's own SELECT and column UPDATE on
-- event_outbox are what let it lock the rows.
create function event_outbox_claim(p_limit integer, p_max_bytes bigint, p_horizon timestamptz)
returns table (
  id text, event_id text, aggregate_type text, aggregate_id text, event_type text,
  payload text, headers text, created_at timestamptz, attempts integer, past_horizon boolean,
  claimed_bytes bigint
)
language plpgsql as $$
declare
  due refcursor;
  v_rows integer := 0;
begin
  if p_limit < 1 or p_max_bytes < 1 then
    raise exception 'event_outbox_claim: limit % / max bytes % must be positive', p_limit, p_max_bytes using errcode = '22023';
  end if;
  open due for
    select o.id::text, o.event_id::text, o.aggregate_type, o.aggregate_id, o.event_type,
           o.payload::text, o.headers::text, o.created_at, o.attempts,
           coalesce(o.replayed_at is not null and o.created_at < p_horizon, false)
    from event_outbox o
    where o.published_at is null and o.parked_at is null
      and (o.next_attempt_at is null or o.next_attempt_at <= now())
    order by o.id
    for update skip locked;
  loop
    fetch due into id, event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, attempts, past_horizon;
    exit when not found;
    v_rows := v_rows + 1;
    claimed_bytes := coalesce(claimed_bytes, 0) + octet_length(payload) + octet_length(headers);
    return next;
    exit when v_rows >= p_limit or claimed_bytes >= p_max_bytes;
  end loop;
  close due;
end
$$;

revoke execute on function event_outbox_claim(integer, bigint, timestamptz) from public;
