// The exchange service's composition root: the boot helper loads settings, applies its schema,
// opens the pool and the transport; `build` opens the archive's object store and checks the
// archive specs against the schema before anything runs. Started: the outbox worker, the
// `case.opened` consumer, the worker, the send-job sweep, the archive loop, HTTP; stopped in
// reverse order on SIGTERM/SIGINT.
import { openArchiveDeps } from '@craig/retention';
import { inboxDeps, loopTask, runService, subscriptionTask } from '@craig/service';
import { exchangeMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

await runService('exchange', process.env, {
  migrations: exchangeMigrationSets(),
  pool: { max: 6 },
  build: async (ctx) => {
    const service = createService({
      ...ctx.coreDeps,
      ...inboxDeps(ctx.settings),
      archive: openArchiveDeps(ctx.settings.archive, ctx),
      sendJobs: { retentionDays: ctx.settings.sendJobs.retentionDays },
    });
    // A drifted table fails the boot loudly, before anything runs.
    await service.engine.check();
    return {
      app: service.app,
      outbox: service.outbox,
      background: [
        subscriptionTask('consumers', () => service.startConsumers()),
        loopTask('worker', (signal) => service.worker.run(signal)),
        loopTask('send job sweep', (signal) => service.sendJobSweep.run(signal)),
        loopTask('archive loop', (signal) => service.archive.run(signal)),
      ],
    };
  },
});
