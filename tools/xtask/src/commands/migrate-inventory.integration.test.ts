import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { runXtask } from '../run.ts';
import { capture } from '../test-io.ts';

let db: TestDatabase | undefined;
afterEach(async () => {
  await db?.drop();
  db = undefined;
});

const env = (url: string, allowed?: string) => ({
  CRAIG_INVENTORY__DATABASE_URL: url,
  CRAIG_INVENTORY__BUS_DATABASE_URL: url,
  CRAIG_INVENTORY__ADMIN_TOKEN: 'x'.repeat(32),
  ...(allowed === undefined ? {} : { CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES: allowed }),
});

describe('pnpm xtask migrate inventory', () => {
  it('applies the mq, cleanup and inventory sets into an allow-listed database', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    const out = capture();
    expect(await runXtask(['migrate', 'inventory'], { env: env(db.url, 'inventory_t*'), stdout: out })).toBe(0);
    expect(out.text()).toMatch(/sets: mq, cleanup, inventory/);
    const [t] = await db.sql`select to_regclass('event_outbox')::text as outbox, to_regclass('items')::text as items, to_regclass('item_classifications')::text as history`;
    expect(t).toEqual({ outbox: 'event_outbox', items: 'items', history: 'item_classifications' });
  });

  it('refuses a database off CLEANUP_ALLOWED_DATABASES (default: inventory) and applies nothing', async () => {
    db = await testDatabase({ prefix: 'inventory_t', max: 1 });
    await expect(runXtask(['migrate', 'inventory'], { env: env(db.url), stdout: capture() })).rejects.toMatchObject({ code: 'database_not_allowed', database: db.name, allowed: ['inventory'] });
    // Not even the mq set, which comes first: every set's preflight runs before any file.
    const [t] = await db.sql`select to_regclass('items') as items, to_regclass('event_outbox') as outbox`;
    expect(t).toEqual({ items: null, outbox: null });
  });
});
