// announceArchivedBatches: the hook rules and security wire into the engine.
import { migrationTemplate } from '@craig/db';
import { MQ_MIGRATIONS } from '@craig/mq';
import type { ObjectStore } from '@craig/store';
import { testDatabase, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_MIGRATIONS, gatedEngine, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import { announceArchivedBatches } from './announce.ts';
import type { ArchiveEngineOptions } from './engine.ts';
import { readLedger } from './fetch.ts';
import { RETENTION_MIGRATIONS } from './migrations.ts';
import { defineArchiveSpec, fixpoints } from './spec.ts';

let db: TestDatabase;
let server: S3TestServer;
let store: ObjectStore;

beforeAll(async () => {
  [db, server] = await Promise.all([
    testDatabase({ template: migrationTemplate([MQ_MIGRATIONS, RETENTION_MIGRATIONS, FIXTURE_MIGRATIONS]), prefix: 'ret_announce', max: 2 }),
    s3({ conditional: true, bucket: 'ret-announce' }),
  ]);
  store = storeFor(server);
});
afterAll(async () => {
  store.close();
  await Promise.all([db.drop(), server.stop()]);
});

const audit = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly(), batchSize: 3 });
const engine = (overrides: Partial<ArchiveEngineOptions> = {}) =>
  gatedEngine(db, { service: 'svc', databaseUrl: db.url, store, specs: [audit], hotWindowDays: 30, prefix: 'archive', onBatchArchived: announceArchivedBatches('svc.archive.batch'), ...overrides });

describe('announceArchivedBatches', () => {
  it('stages one event per archived batch, keyed by the archive id, carrying where the object is and what it holds', async () => {
    await db.sql`insert into audit_events (occurred_at, actor) select now() - interval '60 days' + make_interval(secs => g), 'a' || g from generate_series(1, 5) g`;
    const report = await engine().runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'drained', rows: 5 });
    const ledger = await readLedger(db.sql);
    expect(ledger).toHaveLength(2);
    const events = await db.sql<{ event_id: string; aggregate_type: string; aggregate_id: string; event_type: string; payload: Record<string, unknown> }[]>`
      select event_id::text, aggregate_type, aggregate_id, event_type, payload from event_outbox order by id`;
    expect(events).toEqual(
      ledger.map((e) => ({
        event_id: e.archiveId,
        aggregate_type: 'archive',
        aggregate_id: e.archiveId,
        event_type: 'svc.archive.batch',
        payload: { archiveId: e.archiveId, table: 'audit_events', key: e.key, rows: e.rowCount, bytes: e.bytes, sha256: e.sha256, minKey: e.minKey, maxKey: e.maxKey, minTs: expect.any(String), maxTs: expect.any(String) },
      })),
    );
    expect(events.map((e) => e.payload.rows)).toEqual([3, 2]);
    // The batch's own timestamps (the ledger reads them back to the millisecond).
    const spans = await db.sql<{ min_ts: Date; max_ts: Date }[]>`
      select date_trunc('milliseconds', (payload->>'minTs')::timestamptz) as min_ts, date_trunc('milliseconds', (payload->>'maxTs')::timestamptz) as max_ts from event_outbox order by id`;
    expect(spans).toEqual(ledger.map((e) => ({ min_ts: new Date(e.minTs), max_ts: new Date(e.maxTs) })));
    await db.sql`delete from event_outbox`;
  });

  it('takes the aggregate type, and stages nothing for a batch that rolls back', async () => {
    await db.sql`insert into audit_events (occurred_at, actor) values (now() - interval '60 days', 'late')`;
    const failed = await engine({
      onBatchArchived: announceArchivedBatches('svc.archive.batch', 'svc_archive'),
      afterStore: async () => {
        await db.sql`update audit_events set note = 'late' where actor = 'late'`;
      },
    }).runCycle();
    expect(failed.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect(await db.sql`select event_type from event_outbox`).toEqual([]);

    await engine({ onBatchArchived: announceArchivedBatches('svc.archive.batch', 'svc_archive') }).runCycle();
    const [entry] = (await readLedger(db.sql)).filter((e) => e.rowCount === 1);
    expect(await db.sql`select aggregate_type, aggregate_id, event_type from event_outbox`).toEqual([{ aggregate_type: 'svc_archive', aggregate_id: entry!.archiveId, event_type: 'svc.archive.batch' }]);
  });
});
