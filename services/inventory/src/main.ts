// The inventory service's composition root: settings → schema → clients → HTTP, the outbox
// worker and the cleanup runner; stopped in reverse order on SIGTERM/SIGINT.
import { RUNTIME_ROLE } from '@craig/cleanup';
import { createClient, migrate } from '@craig/db';
import { BUS_MIGRATIONS, createTransport } from '@craig/mq';
import { createLogger, Lifecycle } from '@craig/service';
import { loadServiceSettings } from '@craig/settings';
import { Registry } from 'prom-client';
import { inventoryMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

const settings = loadServiceSettings('inventory', process.env);
const logger = createLogger('inventory', settings.logLevel);
const life = new Lifecycle(logger);
life.stopOnSignals();

try {
  // The installer guard runs first: nothing is applied to a database off the allow-list.
  await migrate(settings.databaseUrl, inventoryMigrationSets(settings.cleanup), { service: 'inventory', logger });
  if (settings.transport.kind === 'postgres') await migrate(settings.transport.busDatabaseUrl, [BUS_MIGRATIONS], { service: 'inventory', logger });

  // Every runtime connection is the non-owner runtime role: the admission triggers hold for it.
  const sql = createClient(settings.databaseUrl, { service: 'inventory', max: 6, role: RUNTIME_ROLE });
  life.add('database pool', () => sql.end({ timeout: 5 }));
  const transport = await createTransport(settings.transport, { service: 'inventory', logger });
  life.add('transport', () => transport.close());

  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: settings.databaseUrl,
    role: RUNTIME_ROLE,
    registry,
    adminToken: settings.adminToken,
    cleanup: settings.cleanup,
    transport,
    retention: settings.retention,
    outboxMaxAttempts: settings.outbox.maxAttempts,
    pruneEveryTicks: settings.outbox.pruneEveryTicks,
    logger,
  });

  service.runner.start();
  life.add('cleanup runner', () => service.runner.stop());
  const outbox = new AbortController();
  const outboxStopped = service.outbox.run(outbox.signal);
  life.add('outbox worker', async () => {
    outbox.abort();
    await outboxStopped;
  });

  await service.app.listen({ host: settings.http.host, port: settings.http.port });
  life.add('http', () => service.app.close());
  logger.info({ host: settings.http.host, port: settings.http.port }, 'inventory service started');
} catch (error) {
  logger.fatal({ err: error }, 'inventory service failed to start');
  process.exitCode = 1;
  await life.stop();
}
