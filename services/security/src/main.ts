// The security service's composition root: the boot helper loads settings, applies its schema,
// opens the pool and the transport; `build` opens the archive's object store and checks the
// archive specs against the schema before anything runs. Started: the outbox worker, the audit
// and dead-letter consumers, the archive loop, HTTP; stopped in reverse order on SIGTERM/SIGINT.
import { openArchiveDeps } from '@craig/retention';
import { inboxDeps, loopTask, runService, subscriptionTask } from '@craig/service';
import { securityMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

await runService('security', process.env, {
  migrations: securityMigrationSets(),
  pool: { max: 6 },
  build: async (ctx) => {
    const service = createService({ ...ctx.coreDeps, ...inboxDeps(ctx.settings), archive: openArchiveDeps(ctx.settings.archive, ctx) });
    // A drifted table fails the boot loudly, before anything runs.
    await service.engine.check();
    return {
      app: service.app,
      outbox: service.outbox,
      // Not `consumers`: the dead-letter subscription is no inbox consumer, so the service opens both.
      background: [subscriptionTask('consumers', () => service.startConsumers()), loopTask('archive loop', (signal) => service.archive.run(signal))],
    };
  },
});
