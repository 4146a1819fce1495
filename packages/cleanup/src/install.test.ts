import { describe, expect, it } from 'vitest';
import { DatabaseNotAllowed } from './errors.ts';
import { assertDatabaseAllowed, isDatabaseAllowed } from './install.ts';

describe('database allow-list', () => {
  it('matches exact names and trailing-* prefixes only', () => {
    expect(isDatabaseAllowed('inventory', ['inventory'])).toBe(true);
    expect(isDatabaseAllowed('inventory2', ['inventory'])).toBe(false);
    expect(isDatabaseAllowed('inventory_t_abc', ['inventory', 'inventory_t*'])).toBe(true);
    expect(isDatabaseAllowed('inventory_x', ['inventory_t*'])).toBe(false);
    expect(isDatabaseAllowed('anything', [])).toBe(false);
  });

  it('refuses with the database and the list', () => {
    expect(() => assertDatabaseAllowed('prod', ['inventory'])).toThrow(DatabaseNotAllowed);
    try {
      assertDatabaseAllowed('prod', ['inventory']);
    } catch (error) {
      expect(error).toMatchObject({ code: 'database_not_allowed', database: 'prod', allowed: ['inventory'], retryable: false });
    }
  });
});
