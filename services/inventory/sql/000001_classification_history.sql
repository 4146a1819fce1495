-- Classification history: a dependent of items, so cleanup deletes cascade for real. One row
-- per change of an item's classification; the latest row is the current one.
create table item_classifications (
  id bigint generated always as identity primary key,
  item_id bigint not null references items (id) on delete cascade,
  classification text not null check (length(classification) between 1 and 100),
  classified_at timestamptz not null default now()
);
-- The cascade looks rows up by item; so does "the latest classification of an item".
create index item_classifications_item_id on item_classifications (item_id, id);

grant select, insert, delete on item_classifications to craig_inventory_runtime;
