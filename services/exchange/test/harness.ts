import { archiveHarness, producer as producerOn, type ArchiveHarness, type TestTransport, type TransportKind } from '@craig/service-testkit';
import { exchangeMigrationSets } from '../src/migrations.ts';
import { createService, type ExchangeDeps, type ExchangeService } from '../src/service.ts';

export { ADMIN_TOKEN, call, counterValue, testTransport, type Producer, type TestTransport, type TransportKind } from '@craig/service-testkit';
export const HOT_WINDOW_DAYS = 365;
export const SEND_JOB_DAYS = 30;
export type ServiceHarness = ArchiveHarness<ExchangeService>;

/** A migrated exchange database, an S3 server, a transport, and the service on them. */
export function serviceHarness(options: { readonly transport?: TransportKind; readonly prefix?: string; readonly sendJobs?: Partial<ExchangeDeps['sendJobs']> } = {}): Promise<ServiceHarness> {
  const { sendJobs, ...rest } = options;
  return archiveHarness({
    name: 'exchange',
    migrations: exchangeMigrationSets(),
    bucket: 'exchange-archive',
    queues: ['exchange.cases'],
    ...rest,
    build: ({ deps, store }) =>
      createService({
        ...deps,
        inboxMaxRetries: 2, inboxMaxDeliveries: 3,
        archive: { store, hotWindowDays: HOT_WINDOW_DAYS, prefix: 'archive', everyMinutes: 60 },
        sendJobs: { retentionDays: SEND_JOB_DAYS, ...sendJobs },
        worker: { intervalMs: 20 },
        consumers: { retryDelayMs: () => 10 },
      }),
  });
}

/** Another service (default cases) publishing on the harness's transport. */
export const producer = (bus: TestTransport, service = 'cases') => producerOn(bus, service, 'exchange');
