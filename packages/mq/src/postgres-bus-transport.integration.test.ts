import { migrationTemplate } from '@craig/db';
import { testDatabase } from '@craig/testkit';
import { transportContract } from '../test/transport-contract.ts';
import { BUS_MIGRATIONS } from './migrations.ts';
import { createPostgresBusTransport } from './postgres-bus-transport.ts';

transportContract('PostgreSQL bus', async () => {
  const db = await testDatabase({ template: migrationTemplate([BUS_MIGRATIONS]), prefix: 'craig_bus', max: 1 });
  return {
    open: () => createPostgresBusTransport({ url: db.url, service: 'contract', maxMessageBytes: 64 * 1024, pollIntervalMs: 100 }),
    consumer: (label) => label,
    teardown: () => db.drop(),
  };
});
