-- Admission in the database (seed 004 "Admission and locking").
--
-- Lock order, everywhere: the source table (items), the per-server coordinator lock, the job
-- row, the server row, then library rows in ascending id. Writers take the server and library
-- admission rows FOR SHARE NOWAIT; fences take them FOR UPDATE NOWAIT. Nobody waits on a gate
-- row, so nobody waits in reverse order behind a sync transaction's library locks: contention
-- fails at once (55P03) and the transaction is retried later.
--
-- Refusals use their own SQLSTATEs so callers can tell them apart (see src/errors.ts):
--   CRA01 admission_closed            the destination server or library is draining
--   CRA02 parent_not_found            the server or library a row names does not exist
--   CRA03 parent_mismatch             the library belongs to another server than the row says
--   CRA04 identity_immutable          an id, external id or owning server was changed
--   CRA05 cleanup_protocol_required   a parent delete or admission change outside a cleanup job

create function cleanup_refuse(p_code text, p_message text, p_detail jsonb) returns void
language plpgsql as $$
begin
  raise exception using errcode = p_code, message = p_message, detail = p_detail::text;
end
$$;

-- The per-server coordinator lock: a transaction-level advisory lock in the two-int space,
-- (770, server id). 770 = 0x0302, the low half of LOCK_KEYS.cleanupServerCoordinator.
create function cleanup_lock_coordinator(p_server_id integer) returns void
language sql as $$
  select pg_advisory_xact_lock(770, p_server_id)
$$;

-- Whether this transaction already holds the server's coordinator lock. Guards ask the lock
-- manager rather than taking the lock themselves: holding it is the proof of the protocol.
create function cleanup_holds_coordinator(p_server_id integer) returns boolean
language sql stable as $$
  select exists (
    select 1 from pg_locks
    where locktype = 'advisory' and pid = pg_backend_pid() and granted
      and classid = 770 and objid = p_server_id and objsubid = 2
  )
$$;

-- Items: every insert and update is admitted by its destination server and library.
create function items_admit() returns trigger
language plpgsql as $$
declare
  srv_admission text;
  lib record;
begin
  if tg_op = 'UPDATE' and (new.id <> old.id or new.server_id <> old.server_id or new.external_id <> old.external_id) then
    perform cleanup_refuse('CRA04', format('item %s: its id, server and external id are immutable', old.id),
      jsonb_build_object('code', 'identity_immutable', 'table', 'items', 'id', old.id));
  end if;
  -- Shared and non-blocking, server before library. The shared locks last until commit, so a
  -- fence (FOR UPDATE NOWAIT) cannot overtake a write it admitted.
  select s.admission into srv_admission from servers s where s.id = new.server_id for share nowait;
  if not found then
    perform cleanup_refuse('CRA02', format('server %s does not exist', new.server_id),
      jsonb_build_object('code', 'parent_not_found', 'scope', 'server', 'id', new.server_id));
  end if;
  select l.server_id, l.admission into lib from libraries l where l.id = new.library_id for share nowait;
  if not found then
    perform cleanup_refuse('CRA02', format('library %s does not exist', new.library_id),
      jsonb_build_object('code', 'parent_not_found', 'scope', 'library', 'id', new.library_id));
  end if;
  if lib.server_id <> new.server_id then
    perform cleanup_refuse('CRA03', format('library %s belongs to server %s, not %s', new.library_id, lib.server_id, new.server_id),
      jsonb_build_object('code', 'parent_mismatch', 'library', new.library_id, 'server', new.server_id, 'owner', lib.server_id));
  end if;
  if srv_admission <> 'open' then
    perform cleanup_refuse('CRA01', format('server %s is draining: admission is closed', new.server_id),
      jsonb_build_object('code', 'admission_closed', 'scope', 'server', 'id', new.server_id));
  end if;
  -- Covers a move into a draining library and an update of a row that stays in one; a move
  -- out of a draining library into an open one is admitted by its destination.
  if lib.admission <> 'open' then
    perform cleanup_refuse('CRA01', format('library %s is draining: admission is closed', new.library_id),
      jsonb_build_object('code', 'admission_closed', 'scope', 'library', 'id', new.library_id));
  end if;
  return new;
end
$$;
create trigger items_admit before insert or update on items
  for each row execute function items_admit();

-- Libraries: server admission fences new libraries; ownership never changes; admission
-- changes and deletes belong to the cleanup protocol.
create function libraries_admit() returns trigger
language plpgsql as $$
declare
  srv_admission text;
begin
  if tg_op = 'INSERT' then
    select s.admission into srv_admission from servers s where s.id = new.server_id for share nowait;
    if not found then
      perform cleanup_refuse('CRA02', format('server %s does not exist', new.server_id),
        jsonb_build_object('code', 'parent_not_found', 'scope', 'server', 'id', new.server_id));
    end if;
    if srv_admission <> 'open' then
      perform cleanup_refuse('CRA01', format('server %s is draining: admission is closed', new.server_id),
        jsonb_build_object('code', 'admission_closed', 'scope', 'server', 'id', new.server_id));
    end if;
    if new.admission <> 'open' or new.cleanup_job_id is not null then
      perform cleanup_refuse('CRA05', 'a new library starts open; admission belongs to the cleanup protocol',
        jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'library'));
    end if;
    return new;
  end if;
  if new.id <> old.id or new.server_id <> old.server_id or new.external_id <> old.external_id then
    perform cleanup_refuse('CRA04', format('library %s: its id, server and external id are immutable', old.id),
      jsonb_build_object('code', 'identity_immutable', 'table', 'libraries', 'id', old.id));
  end if;
  if (new.admission, new.cleanup_job_id) is distinct from (old.admission, old.cleanup_job_id)
     and not cleanup_holds_coordinator(old.server_id) then
    perform cleanup_refuse('CRA05', format('library %s: admission changes only through a cleanup job', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'library', 'id', old.id));
  end if;
  return new;
end
$$;
create trigger libraries_admit before insert or update on libraries
  for each row execute function libraries_admit();

-- Even an empty library needs the protocol: the delete must run inside a removal job's
-- library phase, under its server's coordinator lock, with no inventory left to cascade to.
create function libraries_guard_delete() returns trigger
language plpgsql as $$
begin
  if not cleanup_holds_coordinator(old.server_id) or not exists (
    select 1 from cleanup_jobs j
    where j.server_id = old.server_id and j.state = 'deleting'
      and ((j.kind = 'remove-library' and j.library_id = old.id and j.phase = 'library')
        or (j.kind = 'remove-server' and j.phase = 'libraries'))
  ) then
    perform cleanup_refuse('CRA05', format('library %s can only be removed by a cleanup job', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'library', 'id', old.id));
  end if;
  if exists (select 1 from items i where i.library_id = old.id) then
    perform cleanup_refuse('CRA05', format('library %s still holds items: it is removed only once empty', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'library', 'id', old.id, 'reason', 'not_empty'));
  end if;
  return old;
end
$$;
create trigger libraries_guard_delete before delete on libraries
  for each row execute function libraries_guard_delete();

create function servers_admit() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    if new.admission <> 'open' or new.cleanup_job_id is not null then
      perform cleanup_refuse('CRA05', 'a new server starts open; admission belongs to the cleanup protocol',
        jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'server'));
    end if;
    return new;
  end if;
  if new.id <> old.id or new.external_id <> old.external_id then
    perform cleanup_refuse('CRA04', format('server %s: its id and external id are immutable', old.id),
      jsonb_build_object('code', 'identity_immutable', 'table', 'servers', 'id', old.id));
  end if;
  if (new.admission, new.cleanup_job_id) is distinct from (old.admission, old.cleanup_job_id)
     and not cleanup_holds_coordinator(old.id) then
    perform cleanup_refuse('CRA05', format('server %s: admission changes only through a cleanup job', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'server', 'id', old.id));
  end if;
  return new;
end
$$;
create trigger servers_admit before insert or update on servers
  for each row execute function servers_admit();

create function servers_guard_delete() returns trigger
language plpgsql as $$
begin
  if not cleanup_holds_coordinator(old.id) or not exists (
    select 1 from cleanup_jobs j
    where j.server_id = old.id and j.state = 'deleting' and j.kind = 'remove-server' and j.phase = 'server'
  ) then
    perform cleanup_refuse('CRA05', format('server %s can only be removed by a cleanup job', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'server', 'id', old.id));
  end if;
  if exists (select 1 from libraries l where l.server_id = old.id) or exists (select 1 from items i where i.server_id = old.id) then
    perform cleanup_refuse('CRA05', format('server %s still has libraries or items: it is removed only once empty', old.id),
      jsonb_build_object('code', 'cleanup_protocol_required', 'scope', 'server', 'id', old.id, 'reason', 'not_empty'));
  end if;
  return old;
end
$$;
create trigger servers_guard_delete before delete on servers
  for each row execute function servers_guard_delete();
