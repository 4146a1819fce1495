-- The non-owner runtime role the service's connections run as (`SET ROLE` at connect). A
-- table owner or superuser could disable the admission triggers; this role cannot, and has
-- no privilege to change identity columns at all.
--
-- Roles are cluster-wide and several databases (tests, benchmarks, services) share one
-- cluster: the role is created once, by whichever install gets there first, and never
-- altered or dropped here. Everything else below is a grant inside this database only, so
-- concurrent installs into different databases never touch each other's objects. Two
-- concurrent CREATE ROLEs race on pg_authid's unique index: the loser gets unique_violation
-- (or duplicate_object when it looked after the winner committed), both of which mean "it
-- exists now".
do $$
begin
  create role craig_inventory_runtime nologin;
exception when duplicate_object or unique_violation then
  null;
end
$$;

-- The installing role must be able to SET ROLE to it (a superuser always can). Best effort: an
-- owner without the privilege to grant it gets a notice, and an operator grants membership.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = current_user and rolsuper)
     and not pg_has_role(current_user, 'craig_inventory_runtime', 'member') then
    execute format('grant craig_inventory_runtime to %I', current_user);
  end if;
exception when insufficient_privilege or unique_violation then
  raise notice 'could not make % a member of craig_inventory_runtime; grant it explicitly', current_user;
end
$$;

do $$
begin
  execute format('grant connect, temporary on database %I to craig_inventory_runtime', current_database());
end
$$;
grant usage on schema public to craig_inventory_runtime;

-- Source tables: rows are written freely, identity columns never; admission columns are
-- updatable but guarded by the triggers (only under a cleanup job's coordinator lock).
grant select, insert, delete on servers, libraries, items to craig_inventory_runtime;
grant update (name, admission, cleanup_job_id, updated_at) on servers to craig_inventory_runtime;
grant update (name, admission, cleanup_job_id, updated_at) on libraries to craig_inventory_runtime;
grant update (library_id, title, updated_at) on items to craig_inventory_runtime;

-- Protocol tables: written by the protocol's functions; deleted from by the history sweep.
grant select, insert, update, delete on cleanup_jobs, cleanup_manifest, cleanup_steps to craig_inventory_runtime;
