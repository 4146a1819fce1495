import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderSchema } from './introspect.ts';

describe('renderSchema', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
    await db.sql.unsafe(`
      create table parent (id bigserial primary key, name text not null default 'x');
      create table child (id int generated always as identity, parent_id bigint not null references parent (id), n numeric check (n >= 0));
      create index child_parent on child (parent_id) where n > 0;
      create view named as select name from parent;
      create function bump() returns trigger language plpgsql as $$ begin return new; end $$;
      create trigger child_bump before insert on child for each row execute function bump();
    `);
  });
  afterAll(() => db.drop());

  it('renders tables, constraints, indexes, views, functions and triggers in name order', async () => {
    const text = await renderSchema(db.sql);
    expect(text).toContain("create table child (\n  id integer not null generated always as identity,\n  parent_id bigint not null,\n  n numeric,\n  constraint child_n_check CHECK (n >= 0::numeric),\n  constraint child_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES parent(id)\n);");
    expect(text).toContain("  name text not null default 'x'::text");
    expect(text).toContain('CREATE INDEX child_parent ON public.child USING btree (parent_id) WHERE (n > (0)::numeric);');
    expect(text).toContain('create view named as\nSELECT parent.name');
    expect(text).toContain('CREATE OR REPLACE FUNCTION public.bump()');
    expect(text).toContain('CREATE TRIGGER child_bump BEFORE INSERT ON child FOR EACH ROW EXECUTE FUNCTION bump();');
    expect(text.indexOf('create table child')).toBeLessThan(text.indexOf('create table parent'));
    // Deterministic: the same schema renders the same text.
    expect(await renderSchema(db.sql)).toBe(text);
  });

  it('changes when the schema changes', async () => {
    const before = await renderSchema(db.sql);
    await db.sql`alter table parent add column extra int`;
    expect(await renderSchema(db.sql)).not.toBe(before);
  });
});
