-- The pending queue (docs/adr/078-outbox-pending-queue.md). An outbox row is PENDING while its id
-- is in event_outbox_queue, PARKED while parked_at is set, and PUBLISHED otherwise. The drain
-- takes a batch's ids out of the queue in the transaction it holds across the publish, so a
-- published event costs the deletion of one narrow queue row instead of a rewrite of its whole
-- outbox row (new version, three index entries, ~750 bytes of WAL: ADR-077). A crash before
-- that transaction commits puts the ids back (at-least-once, as before).
--
-- Invariants, each kept by the one place that changes the state:
--   * a row is queued in the transaction that inserts it (the trigger below), so no committed
--     outbox row is unpublished without being queued or parked;
--   * the drain removes an id only in the transaction that confirmed its publish (or parks it,
--     or puts it back with a backoff);
--   * a queued row is never parked (parking removes the id, redrive puts it back);
--   * only replay and redrive queue an existing row; replay holds the transport sweep's lock
--     while it does, so the sweep never deletes a row a replay is queuing.
create table event_outbox_queue (
  id bigint primary key,
  -- Per-row retry backoff after a counted failure: the drain skips the row until then.
  next_attempt_at timestamptz
);

-- Every row pending today (published_at still says so) goes into the queue.
insert into event_outbox_queue (id, next_attempt_at)
select id, next_attempt_at from event_outbox where published_at is null and parked_at is null;

-- Whatever inserts an outbox row (stageEvent, a fixture, an operator's SQL) queues it in the
-- same statement; a row inserted already parked is not queued. One statement-level call per
-- INSERT, not one per row.
create function event_outbox_enqueue() returns trigger
language plpgsql as $$
begin
  insert into event_outbox_queue (id) select s.id from staged s where s.parked_at is null;
  return null;
end
$$;

create trigger event_outbox_enqueue
after insert on event_outbox
referencing new table as staged
for each statement execute function event_outbox_enqueue();

-- An emptied outbox has nothing pending: TRUNCATE (a test's reset, an operator's) empties the
-- queue with it.
create function event_outbox_truncate_queue() returns trigger
language plpgsql as $$
begin
  truncate event_outbox_queue;
  return null;
end
$$;

create trigger event_outbox_truncate_queue
after truncate on event_outbox
for each statement execute function event_outbox_truncate_queue();

-- The retention sweep, replay and the overrun check walk rows by created_at (the old index was
-- partial on published_at, which no longer exists).
create index event_outbox_created on event_outbox (created_at);

-- The drain no longer writes the outbox row of an event it publishes: "published" is the
-- absence of a queue row, and the backoff lives in the queue. Dropping the columns drops the
-- pending and prune indexes and the CHECKs that named them.
alter table event_outbox drop column published_at, drop column next_attempt_at;

-- An outbox row is now inserted once and deleted a window later (a failure or a park rewrites
-- it, rarely): autovacuum's insert threshold keeps the visibility map current for the sweep.
-- The queue takes an insert and a delete for every event; its dead entries sit at the head of
-- the index every claim walks, so it is vacuumed after a few thousand of them, whatever its size.
alter table event_outbox_queue set (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_insert_scale_factor = 0,
  autovacuum_vacuum_insert_threshold = 5000,
  autovacuum_analyze_scale_factor = 0,
  autovacuum_analyze_threshold = 5000
);

-- The drain's claim (docs/adr/068-byte-bounded-drain-claim.md, ADR-078): as before, the oldest
-- due pending rows through a cursor that locks each queue row only when it is fetched, at most
-- p_limit of them and no more than it takes their payload and headers text to reach
-- p_max_bytes. The claim now also deletes the queue rows it returns, in the caller's
-- transaction: the drain commits that only after the transport confirmed, and puts back the ids
-- it could not publish (with a backoff when the failure counts).
--
-- The queue drives the claim, in id order, and each outbox row is reached by its primary key
-- (the lateral subquery with OFFSET 0 is never flattened, so the planner cannot turn the join
-- around): a plan walking the outbox instead would pass over every published row still in it.
-- The cursor's plan is costed for every queued row, which would make it worth JIT-compiling on
-- a long queue: ~300 ms of compilation for a claim that runs in ~20 ms. Hence jit = off.
create or replace function event_outbox_claim(p_limit integer, p_max_bytes bigint, p_horizon timestamptz)
returns table (
  id text, event_id text, aggregate_type text, aggregate_id text, event_type text,
  payload text, headers text, created_at timestamptz, attempts integer, past_horizon boolean,
  claimed_bytes bigint
)
language plpgsql
set jit = off
as $$
declare
  due refcursor;
  v_id bigint;
  v_ids bigint[] := '{}';
  v_rows integer := 0;
begin
  if p_limit < 1 or p_max_bytes < 1 then
    raise exception 'event_outbox_claim: limit % / max bytes % must be positive', p_limit, p_max_bytes using errcode = '22023';
  end if;
  open due for
    select q.id, o.event_id::text, o.aggregate_type, o.aggregate_id, o.event_type,
           o.payload::text, o.headers::text, o.created_at, o.attempts,
           coalesce(o.replayed_at is not null and o.created_at < p_horizon, false)
    from event_outbox_queue q
    cross join lateral (select * from event_outbox r where r.id = q.id offset 0) o
    where q.next_attempt_at is null or q.next_attempt_at <= now()
    order by q.id
    for update of q skip locked;
  loop
    fetch due into v_id, event_id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, attempts, past_horizon;
    exit when not found;
    v_rows := v_rows + 1;
    v_ids[v_rows] := v_id;
    id := v_id::text;
    claimed_bytes := coalesce(claimed_bytes, 0) + octet_length(payload) + octet_length(headers);
    return next;
    exit when v_rows >= p_limit or claimed_bytes >= p_max_bytes;
  end loop;
  close due;
  -- The ids ascend: the range keeps this to an index range scan of the rows just fetched.
  if v_rows > 0 then
    delete from event_outbox_queue q where q.id between v_ids[1] and v_ids[v_rows] and q.id = any(v_ids);
  end if;
end
$$;

revoke execute on function event_outbox_claim(integer, bigint, timestamptz) from public;
