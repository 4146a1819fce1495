// The inventory service's composition root (the boot helper does settings → schema → clients →
// start → stop in reverse order on SIGTERM/SIGINT). Every runtime connection is the non-owner
// runtime role, so the cleanup admission guards hold for it; the installer guard in the
// `cleanup` set refuses a database off CLEANUP_ALLOWED_DATABASES before anything is applied.
import { RUNTIME_ROLE } from '@craig/cleanup';
import { runService } from '@craig/service';
import { inventoryMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

await runService('inventory', process.env, {
  migrations: (settings) => inventoryMigrationSets(settings.cleanup),
  pool: { max: 6, role: RUNTIME_ROLE },
  build: ({ settings, coreDeps }) => {
    const service = createService({ ...coreDeps, role: RUNTIME_ROLE, cleanup: settings.cleanup });
    return {
      app: service.app,
      outbox: service.outbox,
      background: [{ name: 'cleanup runner', start: () => service.runner.start(), stop: () => service.runner.stop() }],
    };
  },
});
