// The safety service's composition root: the boot helper loads settings, applies `mq`,
// `case_refs` and `safety`, opens the pool and the transport, starts the outbox worker, the
// `case.*` consumer and the HTTP server, and stops them in reverse order on SIGTERM/SIGINT.
import { runService } from '@craig/service';
import { SAFETY_MIGRATION_SETS } from './migrations.ts';
import { createService } from './service.ts';

await runService('safety', process.env, {
  migrations: SAFETY_MIGRATION_SETS,
  pool: { max: 6 },
  build: ({ coreDeps }) => createService(coreDeps),
});
