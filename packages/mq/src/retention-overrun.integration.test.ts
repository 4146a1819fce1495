// Red harness: seeded overdue rows turn the transport invariants red, a prune cycle turns them green.
import type { TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedInbox, seedOutbox, serviceDatabase } from '../test/helpers.ts';
import { defineRetentionSpec, retentionOverrun, transportRetentionSpecs } from './retention-overrun.ts';
import { pruneTransportTables } from './transport-prune.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await serviceDatabase(1);
});
afterAll(() => db.drop());

const windows = { outboxDays: 30, inboxDays: 31 };

describe('retentionOverrun', () => {
  it('is green on fresh data, red on seeded overdue rows (naming count and oldest), green again after a prune cycle', async () => {
    const [outbox, inbox] = transportRetentionSpecs(windows);
    // Inside window + 48 h grace: not overdue. Pending past it: never eligible, never overdue.
    await seedOutbox(db.sql, { n: 4, ageDays: 31.5, published: true });
    await seedOutbox(db.sql, { n: 3, ageDays: 90 });
    await seedInbox(db.sql, 2, 32.5);
    expect(await retentionOverrun(db.sql, outbox)).toEqual({ name: 'event_outbox_retention_overrun', ok: true, overdueRows: 0, oldest: null });
    expect(await retentionOverrun(db.sql, inbox)).toMatchObject({ name: 'event_inbox_retention_overrun', ok: true, overdueRows: 0 });

    await seedOutbox(db.sql, { n: 5, ageDays: 33, published: true });
    await seedInbox(db.sql, 6, 34);
    const red = await retentionOverrun(db.sql, outbox);
    expect(red).toMatchObject({ ok: false, overdueRows: 5 });
    expect((Date.now() - red.oldest!.getTime()) / 86_400_000).toBeCloseTo(33, 0);
    expect(await retentionOverrun(db.sql, inbox)).toMatchObject({ ok: false, overdueRows: 6 });

    await pruneTransportTables({ databaseUrl: db.url, service: 'invariants', retention: windows });
    expect(await retentionOverrun(db.sql, outbox)).toMatchObject({ ok: true, overdueRows: 0 });
    expect(await retentionOverrun(db.sql, inbox)).toMatchObject({ ok: true, overdueRows: 0 });
  });

  it('a disabled window holds trivially; specs refuse identifiers that are not plain names', async () => {
    const [outbox] = transportRetentionSpecs({ outboxDays: 0, inboxDays: 31 });
    expect(await retentionOverrun(db.sql, outbox)).toMatchObject({ ok: true });
    expect(() => defineRetentionSpec({ name: 'x', table: 'a; drop', column: 'c', windowDays: 1 })).toThrow(TypeError);
    expect(() => defineRetentionSpec({ name: 'x', table: 'a', column: 'c', windowDays: -1 })).toThrow(RangeError);
  });

  it('serves a service-local spec with its own table and grace', async () => {
    await db.sql`create table jobs (id int, finished_at timestamptz)`;
    await db.sql`insert into jobs values (1, now() - interval '10 days'), (2, now() - interval '3 days'), (3, null)`;
    const spec = defineRetentionSpec({ name: 'jobs_retention_overrun', table: 'jobs', column: 'finished_at', windowDays: 5, graceHours: 24 });
    expect(await retentionOverrun(db.sql, spec)).toMatchObject({ name: 'jobs_retention_overrun', ok: false, overdueRows: 1 });
  });
});
