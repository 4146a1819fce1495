// The cases service's composition root: the boot helper loads settings, applies `mq` and
// `cases`, opens the pool and the transport, starts the outbox worker and the HTTP server,
// and stops them in reverse order on SIGTERM/SIGINT.
import { runService } from '@craig/service';
import { CASES_MIGRATION_SETS } from './migrations.ts';
import { createService } from './service.ts';

await runService('cases', process.env, {
  migrations: CASES_MIGRATION_SETS,
  pool: { max: 6 },
  build: ({ coreDeps }) => createService(coreDeps),
});
