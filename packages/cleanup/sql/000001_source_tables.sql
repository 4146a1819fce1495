-- The inventory source graph the cleanup protocol guards: media servers → libraries → items.
-- Identity is immutable (guarded in 000003): a server's external id, a library's server and
-- external id, an item's id, server and external id. Items move between libraries of their
-- own server by changing library_id.
--
-- Parent foreign keys cascade, as the production schema they replace did; the guards in
-- 000003 make sure no parent delete ever reaches remaining inventory.

create table servers (
  id integer generated always as identity primary key,
  external_id text not null unique
    check (external_id ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$'),
  name text not null check (length(name) between 1 and 200),
  -- 'open' admits writes; 'draining' while a remove-server job owns the server.
  admission text not null default 'open' check (admission in ('open', 'draining')),
  cleanup_job_id bigint,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table libraries (
  id bigint generated always as identity primary key,
  server_id integer not null references servers (id) on delete cascade,
  external_id text not null
    check (external_id ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$'),
  name text not null check (length(name) between 1 and 200),
  -- 'draining' from a prune job's seal, or a remove-library job's creation, until the job ends.
  admission text not null default 'open' check (admission in ('open', 'draining')),
  cleanup_job_id bigint,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (server_id, external_id)
);
-- A remove-server job walks its server's libraries in id order.
create index libraries_server_id_id on libraries (server_id, id);

create table items (
  id bigint generated always as identity primary key,
  server_id integer not null references servers (id) on delete cascade,
  library_id bigint not null references libraries (id) on delete cascade,
  external_id text not null
    check (external_id ~ '^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,127}$'),
  title text not null default '' check (length(title) <= 1000),
  updated_at timestamptz not null default now(),
  unique (server_id, external_id)
);
-- Bounded candidate selection: every step walks one library's items in id order from a cursor.
create index items_library_id_id on items (library_id, id);
