// The hook as rules and security wire it: stageEvent from @craig/mq inside the ledger
// transaction, so the announcement exists exactly when the batch's delete committed.
import { migrationTemplate } from '@craig/db';
import { MQ_MIGRATIONS, stageEvent } from '@craig/mq';
import type { ObjectStore } from '@craig/store';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_MIGRATIONS, gatedEngine, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import type { ArchiveEngineOptions } from './engine.ts';
import { readLedger } from './fetch.ts';
import { RETENTION_MIGRATIONS } from './migrations.ts';
import { defineArchiveSpec, fixpoints } from './spec.ts';

let db: TestDatabase;
let server: S3TestServer;
let store: ObjectStore;

beforeAll(async () => {
  [db, server] = await Promise.all([
    testDatabase({ template: migrationTemplate([MQ_MIGRATIONS, RETENTION_MIGRATIONS, FIXTURE_MIGRATIONS]), prefix: 'ret_outbox', max: 2 }),
    s3({ conditional: true, bucket: 'ret-outbox' }),
  ]);
  store = storeFor(server);
});
afterAll(async () => {
  store.close();
  await Promise.all([db.drop(), server.stop()]);
});

const audit = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });
const announce: ArchiveEngineOptions['onBatchArchived'] = async (tx, batch) => {
  await stageEvent(tx, {
    aggregateType: 'archive',
    aggregateId: batch.archiveId,
    eventType: 'archive.batch_archived',
    payload: { table: batch.table, key: batch.key, sha256: batch.sha256, rows: batch.rowCount, minTs: batch.minTs, maxTs: batch.maxTs },
  });
};
const engine = (overrides: Partial<ArchiveEngineOptions> = {}) =>
  gatedEngine(db, { service: 'security', databaseUrl: db.url, store, specs: [audit], hotWindowDays: 30, prefix: 'archive', onBatchArchived: announce, ...overrides });

describe('announcing archived batches through the outbox', () => {
  it('commits announced batches synchronously (an event must never outlive its batch)', async () => {
    await db.sql`insert into audit_events (occurred_at, actor) values (now() - interval '60 days', 'sync')`;
    const seen: string[] = [];
    await engine({
      onBatchArchived: async (tx, batch) => {
        seen.push(((await tx`show synchronous_commit`)[0] as { synchronous_commit: string }).synchronous_commit);
        await announce(tx, batch);
      },
    }).runCycle();
    expect(seen).toEqual(['on']);
    await db.sql`delete from event_outbox`;
  });

  it('stages one event per committed batch and none for a rolled-back one', async () => {
    await db.sql`insert into audit_events (occurred_at, actor) select now() - interval '60 days' + make_interval(secs => g), 'a' || g from generate_series(1, 5) g`;
    const rolledBack = await engine({
      afterStore: async () => {
        await db.sql`update audit_events set note = 'late' where actor = 'a1'`;
      },
    }).runCycle();
    expect(rolledBack.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect(await db.sql`select event_type from event_outbox`).toEqual([]);

    await engine().runCycle();
    const events = await db.sql<{ aggregate_id: string; event_type: string; payload: { rows: number; key: string } }[]>`select aggregate_id, event_type, payload from event_outbox`;
    const entry = (await readLedger(db.sql)).find((e) => e.archiveId === events[0]?.aggregate_id);
    expect(entry).toMatchObject({ rowCount: 5 });
    expect(events).toEqual([{ aggregate_id: entry!.archiveId, event_type: 'archive.batch_archived', payload: expect.objectContaining({ rows: 5, key: entry!.key }) }]);
  });
});
