-- Least privilege (docs/adr/063-runtime-roles.md): inventory rows are deleted only by a cleanup
-- step. cleanup_step runs as the owner of the tables (SECURITY DEFINER) with its search_path
-- pinned: public (where nobody but the owner may create) and pg_temp last, so no object a
-- caller creates can stand in for a table or function it names. The runtime role loses the
-- DELETE on the source graph that 000004 gave it; EXECUTE on the step is its alone.
alter function cleanup_step(bigint, integer, integer, integer) security definer set search_path = public, pg_temp;
revoke execute on function cleanup_step(bigint, integer, integer, integer) from public;
grant execute on function cleanup_step(bigint, integer, integer, integer) to craig_inventory_runtime;
revoke delete on servers, libraries, items from craig_inventory_runtime;
-- Step records are written by the step alone (as the owner); the runtime role reads them and the
-- history sweep deletes them.
revoke insert, update on cleanup_steps from craig_inventory_runtime;
