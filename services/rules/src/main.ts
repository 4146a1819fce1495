// The rules service's composition root: settings → schema → clients → consumers, the
// outbox worker, the archive loop and HTTP; stopped in reverse order on SIGTERM/SIGINT.
import { createClient, migrate } from '@craig/db';
import { BUS_MIGRATIONS, createTransport } from '@craig/mq';
import { createLogger, Lifecycle } from '@craig/service';
import { loadServiceSettings } from '@craig/settings';
import { createObjectStore } from '@craig/store';
import { Registry } from 'prom-client';
import { rulesMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

const settings = loadServiceSettings('rules', process.env);
const logger = createLogger('rules', settings.logLevel);
const life = new Lifecycle(logger);
life.stopOnSignals();

try {
  await migrate(settings.databaseUrl, rulesMigrationSets(), { service: 'rules', logger });
  if (settings.transport.kind === 'postgres') await migrate(settings.transport.busDatabaseUrl, [BUS_MIGRATIONS], { service: 'rules', logger });

  const sql = createClient(settings.databaseUrl, { service: 'rules', max: 6 });
  life.add('database pool', () => sql.end({ timeout: 5 }));
  const transport = await createTransport(settings.transport, { service: 'rules', logger });
  life.add('transport', () => transport.close());
  // Aborted on stop: an upload in flight gives up instead of holding shutdown for its retry budget.
  const storeStop = new AbortController();
  const store = createObjectStore(settings.archive.objectStore, { logger, signal: storeStop.signal });
  life.add('object store', async () => {
    storeStop.abort();
    store.close();
  });

  const registry = new Registry();
  const service = createService({
    sql,
    databaseUrl: settings.databaseUrl,
    registry,
    adminToken: settings.adminToken,
    transport,
    retention: settings.retention,
    outboxMaxAttempts: settings.outbox.maxAttempts,
    pruneEveryTicks: settings.outbox.pruneEveryTicks,
    inboxMaxRetries: settings.inbox.maxRetries,
    archive: { store, hotWindowDays: settings.archive.hotWindowDays, prefix: settings.archive.prefix, everyMinutes: settings.archive.everyMinutes },
    logger,
  });
  // The specs against the schema, before anything runs: a drifted table fails the boot loudly.
  await service.engine.check();

  const consumers = await service.startConsumers();
  life.add('consumers', () => consumers.close());
  const outbox = new AbortController();
  const outboxStopped = service.outbox.run(outbox.signal);
  life.add('outbox worker', async () => {
    outbox.abort();
    await outboxStopped;
  });
  const archive = new AbortController();
  const archiveStopped = service.archive.run(archive.signal);
  life.add('archive loop', async () => {
    archive.abort();
    await archiveStopped;
  });

  await service.app.listen({ host: settings.http.host, port: settings.http.port });
  life.add('http', () => service.app.close());
  logger.info({ host: settings.http.host, port: settings.http.port }, 'rules service started');
} catch (error) {
  logger.fatal({ err: error }, 'rules service failed to start');
  process.exitCode = 1;
  await life.stop();
}
