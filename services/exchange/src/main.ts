// The exchange service's composition root: settings → schema → clients → the consumer, the
// worker, the outbox worker, the send-job sweep, the archive loop and HTTP; stopped in reverse
// order on SIGTERM/SIGINT.
import { createClient, migrate } from '@craig/db';
import { BUS_MIGRATIONS, createTransport } from '@craig/mq';
import { createLogger, Lifecycle } from '@craig/service';
import { loadServiceSettings } from '@craig/settings';
import { createObjectStore } from '@craig/store';
import { Registry } from 'prom-client';
import { exchangeMigrationSets } from './migrations.ts';
import { createService } from './service.ts';

const settings = loadServiceSettings('exchange', process.env);
const logger = createLogger('exchange', settings.logLevel);
const life = new Lifecycle(logger);
life.stopOnSignals();

/** Start `loop(signal)` and register its stop (abort, then wait for it) under `name`. */
function background(name: string, loop: (signal: AbortSignal) => Promise<void>): void {
  const stop = new AbortController();
  const stopped = loop(stop.signal);
  life.add(name, async () => {
    stop.abort();
    await stopped;
  });
}

try {
  await migrate(settings.databaseUrl, exchangeMigrationSets(), { service: 'exchange', logger });
  if (settings.transport.kind === 'postgres') await migrate(settings.transport.busDatabaseUrl, [BUS_MIGRATIONS], { service: 'exchange', logger });

  const sql = createClient(settings.databaseUrl, { service: 'exchange', max: 6 });
  life.add('database pool', () => sql.end({ timeout: 5 }));
  const transport = await createTransport(settings.transport, { service: 'exchange', logger });
  life.add('transport', () => transport.close());
  // Aborted on stop: an upload in flight gives up instead of holding shutdown for its retry budget.
  const storeStop = new AbortController();
  const store = createObjectStore(settings.archive.objectStore, { logger, signal: storeStop.signal });
  life.add('object store', async () => {
    storeStop.abort();
    store.close();
  });

  const service = createService({
    sql,
    databaseUrl: settings.databaseUrl,
    registry: new Registry(),
    adminToken: settings.adminToken,
    transport,
    retention: settings.retention,
    outboxMaxAttempts: settings.outbox.maxAttempts,
    pruneEveryTicks: settings.outbox.pruneEveryTicks,
    inboxMaxRetries: settings.inbox.maxRetries,
    archive: { store, hotWindowDays: settings.archive.hotWindowDays, prefix: settings.archive.prefix, everyMinutes: settings.archive.everyMinutes },
    sendJobs: { retentionDays: settings.sendJobs.retentionDays },
    logger,
  });
  // The specs against the schema, before anything runs: a drifted table fails the boot loudly.
  await service.engine.check();

  const consumers = await service.startConsumers();
  life.add('consumers', () => consumers.close());
  background('worker', (signal) => service.worker.run(signal));
  background('outbox worker', (signal) => service.outbox.run(signal));
  background('send job sweep', (signal) => service.sendJobSweep.run(signal));
  background('archive loop', (signal) => service.archive.run(signal));

  await service.app.listen({ host: settings.http.host, port: settings.http.port });
  life.add('http', () => service.app.close());
  logger.info({ host: settings.http.host, port: settings.http.port }, 'exchange service started');
} catch (error) {
  logger.fatal({ err: error }, 'exchange service failed to start');
  process.exitCode = 1;
  await life.stop();
}
