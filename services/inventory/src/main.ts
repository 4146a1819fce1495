// The inventory service's composition root (the boot helper does settings → schema → clients →
// start → stop in reverse order on SIGTERM/SIGINT). Every runtime connection is the non-owner
// runtime role (RUNTIME_ROLE, `craig_inventory_runtime` by default), so the cleanup admission
// guards hold for it and only a cleanup step deletes inventory; the installer guard in the
// `cleanup` set refuses a database off CLEANUP_ALLOWED_DATABASES before anything is applied.
import { runService } from '@craig/service';
import { inventoryMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

await runService('inventory', process.env, {
  migrations: (settings) => inventoryMigrationSets(settings.cleanup),
  pool: { max: 6 },
  build: ({ settings, coreDeps }) => {
    const service = createService({ ...coreDeps, role: settings.runtimeRole, cleanup: settings.cleanup });
    return {
      app: service.app,
      outbox: service.outbox,
      background: [{ name: 'cleanup runner', start: () => service.runner.start(), stop: () => service.runner.stop() }],
    };
  },
});
