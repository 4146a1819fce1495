import { archiveHarness, producer as producerOn, type ArchiveHarness, type TestTransport, type TransportKind } from '@craig/service-testkit';
import { rulesMigrationSets } from '../src/migrations.ts';
import { createService, type RulesService } from '../src/service.ts';

export { ADMIN_TOKEN, call, counterValue, testTransport, type Producer, type TestTransport, type TransportKind } from '@craig/service-testkit';
export const HOT_WINDOW_DAYS = 90;
export type ServiceHarness = ArchiveHarness<RulesService>;

/** A migrated rules database, an S3 server, a transport, and the service on them. */
export function serviceHarness(options: { readonly transport?: TransportKind; readonly prefix?: string } = {}): Promise<ServiceHarness> {
  return archiveHarness({
    name: 'rules',
    migrations: rulesMigrationSets(),
    bucket: 'rules-archive',
    queues: ['rules.evaluate', 'listener.evaluated'],
    ...options,
    build: ({ deps, store }) => createService({ ...deps, inboxMaxRetries: 2, inboxMaxDeliveries: 3, archive: { store, hotWindowDays: HOT_WINDOW_DAYS, prefix: 'archive', everyMinutes: 60 }, consumers: { retryDelayMs: () => 10 } }),
  });
}

/** Another service (default cases) publishing on the harness's transport. */
export const producer = (bus: TestTransport, service = 'cases') => producerOn(bus, service, 'rules');
