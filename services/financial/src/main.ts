// The financial service's composition root: settings → schema → clients → the placement
// consumer, the outbox worker, the settled reconcile sweep and HTTP; stopped in reverse order
// on SIGTERM/SIGINT.
import { createClient, migrate } from '@craig/db';
import { BUS_MIGRATIONS, createTransport } from '@craig/mq';
import { createLogger, Lifecycle } from '@craig/service';
import { loadServiceSettings } from '@craig/settings';
import { Registry } from 'prom-client';
import { financialMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

const settings = loadServiceSettings('financial', process.env);
const logger = createLogger('financial', settings.logLevel);
const life = new Lifecycle(logger);
life.stopOnSignals();

try {
  await migrate(settings.databaseUrl, financialMigrationSets(), { service: 'financial', logger });
  if (settings.transport.kind === 'postgres') await migrate(settings.transport.busDatabaseUrl, [BUS_MIGRATIONS], { service: 'financial', logger });

  const sql = createClient(settings.databaseUrl, { service: 'financial', max: 6 });
  life.add('database pool', () => sql.end({ timeout: 5 }));
  const transport = await createTransport(settings.transport, { service: 'financial', logger });
  life.add('transport', () => transport.close());

  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: settings.databaseUrl,
    registry,
    adminToken: settings.adminToken,
    transport,
    retention: settings.retention,
    sweep: { retentionDays: settings.reconcile.settledRetentionDays },
    outboxMaxAttempts: settings.outbox.maxAttempts,
    pruneEveryTicks: settings.outbox.pruneEveryTicks,
    inboxMaxRetries: settings.inbox.maxRetries,
    logger,
  });

  const consumers = await service.startConsumers();
  life.add('consumers', () => consumers.close());
  const outbox = new AbortController();
  const outboxStopped = service.outbox.run(outbox.signal);
  life.add('outbox worker', async () => {
    outbox.abort();
    await outboxStopped;
  });
  const sweep = new AbortController();
  const sweepStopped = service.sweep.run(sweep.signal);
  life.add('reconcile sweep', async () => {
    sweep.abort();
    await sweepStopped;
  });

  await service.app.listen({ host: settings.http.host, port: settings.http.port });
  life.add('http', () => service.app.close());
  logger.info({ host: settings.http.host, port: settings.http.port }, 'financial service started');
} catch (error) {
  logger.fatal({ err: error }, 'financial service failed to start');
  process.exitCode = 1;
  await life.stop();
}
