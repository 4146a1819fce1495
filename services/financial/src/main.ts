// The financial service's composition root: the boot helper loads settings, applies its schema,
// opens the pool and the transport, starts the outbox worker, the placement consumer, the settled
// reconcile sweep and HTTP, and stops them in reverse order on SIGTERM/SIGINT.
import { inboxDeps, loopTask, runService, subscriptionTask } from '@craig/service';
import { financialMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

await runService('financial', process.env, {
  migrations: financialMigrationSets(),
  pool: { max: 6 },
  build: ({ settings, coreDeps }) => {
    const service = createService({ ...coreDeps, ...inboxDeps(settings), sweep: { retentionDays: settings.reconcile.settledRetentionDays } });
    return {
      app: service.app,
      outbox: service.outbox,
      background: [subscriptionTask('consumers', () => service.startConsumers()), loopTask('reconcile sweep', (signal) => service.sweep.run(signal))],
    };
  },
});
