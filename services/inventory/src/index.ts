/**
 * @craig/svc-inventory: media servers → libraries → items synced from a provider, pruned and
 * removed only through bounded, fenced cleanup jobs (`@craig/cleanup`).
 */

/** The service factory `main.ts` and the tests use. */
export { createService, type InventoryDeps, type InventoryService } from './service.ts';
/** The database's migration sets (`cleanup` then `inventory`), both behind the installer guard. */
export { inventoryMigrationSets, INVENTORY_MIGRATIONS_DIRECTORY } from './migrations.ts';
/** Source reads and writes as the runtime role. */
export { InventoryStore, MAX_ITEMS_PER_PAGE, type LibraryRow, type ProviderItem, type ServerRow } from './inventory-store.ts';
/** What `pnpm xtask devstack` runs: aged history, sync traffic over the HTTP API, the tables it counts. */
export { demo, createInventoryDemo, seedInventoryHistory, DemoRequestFailed, INVENTORY_DEMO_TABLES, type InventoryDemoOptions } from './demo.ts';
/** What the service publishes and consumes (`pnpm xtask fleet check` reads the subscription graph from it). */
export { INVENTORY_EVENTS } from './events.ts';
