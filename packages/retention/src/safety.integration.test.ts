// Nothing hot is deleted against an unverified archive, and a batch whose rows changed between
// select and delete rolls back whole. Each case checks the hot rows, the ledger and the store.
import type { ObjectStore } from '@craig/store';
import type { TestDatabase } from '@craig/testkit';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closedPort, fixtureDatabase, gatedEngine, s3, storeFor, type S3TestServer } from '../test/fixtures.ts';
import type { ArchiveEngineOptions } from './engine.ts';
import { readArchiveObject, readLedger } from './fetch.ts';
import { defineArchiveSpec, fixpoints } from './spec.ts';
import { notAtFixpoint } from './writer-refusal.ts';

let db: TestDatabase;
let server: S3TestServer;
let garageServer: S3TestServer;
const stores: ObjectStore[] = [];

beforeAll(async () => {
  [db, server, garageServer] = await Promise.all([fixtureDatabase('ret_safety'), s3({ conditional: true, bucket: 'ret-safety' }), s3({ bucket: 'ret-garage' })]);
});
afterAll(async () => {
  await Promise.all([db.drop(), server.stop(), garageServer.stop()]);
});
beforeEach(async () => {
  await db.sql`truncate audit_events, jobs, notes`;
  await db.sql`alter table archive_ledger disable trigger user`;
  await db.sql`delete from archive_ledger`;
  await db.sql`alter table archive_ledger enable trigger user`;
});
afterEach(async () => {
  for (const s of stores.splice(0)) s.close();
  await Promise.all([server.clearFaults(), server.clearRequests()]);
});

const audit = defineArchiveSpec({ table: 'audit_events', keyColumn: 'id', timestampColumn: 'occurred_at', fixpoint: fixpoints.insertOnly() });
const jobs = defineArchiveSpec({
  table: 'jobs',
  keyColumn: 'id',
  timestampColumn: 'created_at',
  fixpoint: fixpoints.terminalStatus('status', ['done', 'failed']),
  guards: [{ table: 'notes', column: 'job_id' }],
  mutableColumns: [
    { column: 'status', protectedBy: 'fixpoint' },
    { column: 'invalidated_at', protectedBy: 'writer_refusal', refusal: 'jobs.invalidate: not at fixpoint' },
  ],
});

function engine(overrides: Partial<ArchiveEngineOptions> = {}) {
  const store = overrides.store ?? storeFor(server);
  stores.push(store);
  return gatedEngine(db, { service: 'lab', databaseUrl: db.url, store, specs: [audit, jobs], hotWindowDays: 30, prefix: 'archive', ...overrides });
}

async function seedAudit(n: number): Promise<void> {
  await db.sql`
    insert into audit_events (occurred_at, actor, note)
    select timestamptz '2020-05-01 00:00:00+00' + make_interval(secs => g), 'actor-' || g, 'note ' || g
    from generate_series(1, ${n}) g`;
}
async function seedJobs(statuses: readonly string[]): Promise<string[]> {
  const rows = await db.sql<{ id: string }[]>`
    insert into jobs (id, created_at, status, finished_on)
    select gen_random_uuid(), now() - interval '60 days' + make_interval(secs => s.n), s.status, current_date - 400
    from unnest(${statuses as string[]}::text[]) with ordinality as s(status, n)
    returning id::text`;
  return rows.map((r) => r.id);
}
const snapshot = (table: 'audit_events' | 'jobs') => db.sql<{ row: string }[]>`select t::text as row from ${db.sql(table)} t order by 1`;
const ledgerCount = async () => (await readLedger(db.sql)).length;
const objectsIn = async (s: S3TestServer) => {
  const store = storeFor(s);
  stores.push(store);
  const keys: string[] = [];
  for await (const o of store.list('archive/lab/')) keys.push(o.key);
  return keys;
};

describe('nothing is deleted when the put fails', () => {
  it('server down', async () => {
    await seedAudit(20);
    const before = await snapshot('audit_events');
    const port = await closedPort();
    const down = storeFor({ ...server, endpoint: `http://127.0.0.1:${port}` });
    const registry = new Registry();
    const report = await engine({ store: down, registry }).runCycle();
    expect(report.tables).toEqual([
      { table: 'audit_events', rows: 0, bytes: 0, batches: 0, outcome: 'failed', error: expect.objectContaining({ code: 'store_request_failed' }) },
      // The store is down: the next table is not attempted.
      { table: 'jobs', rows: 0, bytes: 0, batches: 0, outcome: 'skipped' },
    ]);
    expect(await snapshot('audit_events')).toEqual(before);
    expect(await ledgerCount()).toBe(0);
    expect((await registry.getSingleMetric('archive_batches_total')!.get()).values).toEqual([{ labels: { table: 'audit_events', outcome: 'store_failed' }, value: 1 }]);
  });

  it('500 past the retries', async () => {
    await seedAudit(20);
    const before = await snapshot('audit_events');
    await server.inject({ method: 'PUT', status: 500, times: -1 });
    const report = await engine().runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'store_request_failed', message: expect.stringContaining('HTTP 500') } });
    expect((await server.requests()).filter((r) => r.method === 'PUT')).toHaveLength(11);
    expect(await snapshot('audit_events')).toEqual(before);
    expect(await ledgerCount()).toBe(0);
  });

  it('timeout: a hung server, given up within the budget', async () => {
    await seedAudit(20);
    const before = await snapshot('audit_events');
    await server.inject({ method: 'PUT', hang: true, times: -1 });
    const started = performance.now();
    const report = await engine({ store: storeFor(server, 's3', { bounds: { requestTimeoutMs: 300, operationBudgetMs: 1000 } }) }).runCycle();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'store_budget_exceeded' } });
    expect(await snapshot('audit_events')).toEqual(before);
    expect(await ledgerCount()).toBe(0);
  });
});

describe('occupied keys', () => {
  const archiveId = '01890a5d-ac96-774b-bcce-b302099a8057';
  const key = `archive/lab/audit_events/2020/05/${archiveId}.ndjson.gz`;

  it('a foreign occupant is refused and the hot rows stay intact', async () => {
    await seedAudit(10);
    const before = await snapshot('audit_events');
    await fetch(`${server.endpoint}/${server.bucket}/${key}`, { method: 'PUT', body: 'not ours' });
    const registry = new Registry();
    const report = await engine({ newArchiveId: () => archiveId, registry }).runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'foreign_object', key } });
    // Counted for the "foreign object refused" alert; the rows it left hot are overdue, for the overrun alert.
    const values = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
    expect(await values('archive_foreign_objects_total')).toEqual([{ labels: { table: 'audit_events' }, value: 1 }]);
    expect(await values('archive_overdue_rows')).toEqual([
      { labels: { table: 'audit_events' }, value: 10 },
      { labels: { table: 'jobs' }, value: 0 },
    ]);
    // A foreign object is no outage: the next table still runs.
    expect(report.tables[1]).toMatchObject({ table: 'jobs', outcome: 'drained' });
    expect(await snapshot('audit_events')).toEqual(before);
    expect(await ledgerCount()).toBe(0);
    expect(await (await fetch(`${server.endpoint}/${server.bucket}/${key}`)).text()).toBe('not ours');
  });

  it('an identical occupant (a batch retried after a crash) converges with a warning', async () => {
    const archiveId = '01890a5d-ac96-774b-bcce-b302099a8058';
    const key = `archive/lab/audit_events/2020/05/${archiveId}.ndjson.gz`;
    await seedAudit(10);
    const crash = await engine({
      newArchiveId: () => archiveId,
      afterStore: async () => {
        throw new Error('killed between put and ledger');
      },
    }).runCycle();
    expect(crash.tables[0]).toMatchObject({ outcome: 'failed', error: { message: 'killed between put and ledger' } });
    expect((await objectsIn(server)).filter((k) => k.includes(archiveId))).toEqual([key]);

    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
    const store = storeFor(server, 's3', { logger });
    const retry = await engine({ store, logger, newArchiveId: () => archiveId }).runCycle();
    expect(retry.tables[0]).toMatchObject({ rows: 10, outcome: 'drained' });
    expect(lines.find((l) => l.msg === 'archive batch')).toMatchObject({ store: 'converged', key });
    expect(lines.some((l) => l.level === 40 && String(l.msg).includes('identical object already at key'))).toBe(true);
    expect((await readLedger(db.sql)).map((e) => e.key)).toEqual([key]);
  });

  it('409 on the create is retried and the batch archives', async () => {
    await seedAudit(10);
    await server.inject({ method: 'PUT', status: 409, times: 2 });
    const report = await engine().runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 10, outcome: 'drained' });
    expect((await server.requests()).filter((r) => r.method === 'PUT').map((r) => r.status)).toEqual([409, 409, 200]);
  });

  it('garage: every object is read back and verified before its rows are deleted', async () => {
    await seedAudit(10);
    const report = await engine({ store: storeFor(garageServer, 'garage'), specs: [audit] }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 10, outcome: 'drained' });
    const [entry] = await readLedger(db.sql);
    expect((await garageServer.requests()).filter((r) => r.key === entry!.key).map((r) => `${r.method} ${r.status}`)).toEqual(['GET 404', 'PUT 200', 'GET 200']);
  });
});

describe('rows that change between select and delete', () => {
  it('a row updated in a column outside the fixpoint stays hot; the batch rolls back and the next cycle archives its new value', async () => {
    await seedAudit(10);
    const existing = await objectsIn(server);
    const registry = new Registry();
    const report = await engine({
      registry,
      afterStore: async ({ table }) => {
        if (table === 'audit_events') await db.sql`update audit_events set note = 'changed after select' where actor = 'actor-5'`;
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch', message: expect.stringContaining('matched 9 of 10') } });
    expect((await registry.getSingleMetric('archive_batches_total')!.get()).values).toContainEqual({ labels: { table: 'audit_events', outcome: 'rolled_back' }, value: 1 });
    expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(10);
    expect(await ledgerCount()).toBe(0);
    expect((await objectsIn(server)).filter((k) => !existing.includes(k))).toHaveLength(1); // the orphan

    await engine().runCycle();
    const [entry] = await readLedger(db.sql);
    const rows = await readArchiveObject(storeFor(server), entry!);
    expect(rows.find((r) => r.actor === 'actor-5')?.note).toBe('changed after select');
    expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(0);
  });

  it('a row updated while the delete waits on its lock stays hot and the batch rolls back', async () => {
    await seedAudit(10);
    let committed: Promise<void> | undefined;
    const report = await engine({
      afterStore: async ({ table }) => {
        if (table !== 'audit_events') return;
        const writer = await db.sql.reserve();
        await writer`begin`;
        await writer`update audit_events set note = 'updated under the delete' where actor = 'actor-3'`;
        // Commit once the engine's delete is queued behind this row lock.
        committed = (async () => {
          await new Promise((r) => setTimeout(r, 300));
          await writer`commit`;
          writer.release();
        })();
      },
    }).runCycle();
    await committed;
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect(await ledgerCount()).toBe(0);
    expect((await db.sql`select note from audit_events where actor = 'actor-3'`)[0]!.note).toBe('updated under the delete');
    expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(10);
  });

  it('a row that leaves its fixpoint rolls the batch back and nothing is lost', async () => {
    const ids = await seedJobs(['done', 'failed', 'done']);
    const before = await snapshot('jobs');
    const report = await engine({
      specs: [jobs],
      afterStore: async () => {
        // A write the preconditions forbid (a terminal row reopened) must still lose nothing.
        await db.sql`update jobs set status = 'running' where id = ${ids[1]!}`;
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect(await ledgerCount()).toBe(0);
    const after = await snapshot('jobs');
    expect(after).toHaveLength(3);
    expect(after.filter((r) => !before.some((b) => b.row === r.row))).toHaveLength(1); // only the reopened row changed
  });

  it('precondition 4: a column outside the fixpoint is kept off eligible rows by the named writer-side refusal', async () => {
    const [doneId, openId] = await seedJobs(['done', 'open']);
    const invalidate = (id: string) => db.sql`update jobs set invalidated_at = now() where id = ${id} and ${notAtFixpoint(db.sql, jobs)}`;
    expect((await invalidate(openId!)).count).toBe(1);
    expect((await invalidate(doneId!)).count).toBe(0);

    // The same refused write racing the archive: it changes nothing, so the batch commits and
    // the archive holds the row as it is.
    const report = await engine({
      specs: [jobs],
      afterStore: async () => {
        expect((await invalidate(doneId!)).count).toBe(0);
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 1, outcome: 'drained' });
    const [entry] = await readLedger(db.sql);
    const [archived] = await readArchiveObject(storeFor(server), entry!);
    expect(archived).toMatchObject({ id: doneId, status: 'done', invalidated_at: null });
    expect((await db.sql`select id::text from jobs`).map((r) => r.id)).toEqual([openId]);
  });

  it('the delete re-checks the guards: a dependent added after the select keeps its parent hot', async () => {
    const [jobId] = await seedJobs(['done']);
    const report = await engine({
      specs: [jobs],
      afterStore: async () => {
        // `notes` has no foreign key: only the guard in the delete protects the job.
        await db.sql`insert into notes (job_id, body) values (${jobId!}, 'late dependent')`;
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ outcome: 'failed', error: { code: 'archive_count_mismatch' } });
    expect((await db.sql`select count(*)::int as n from jobs`)[0]!.n).toBe(1);
  });
});

describe('after a failed batch', () => {
  it('batches already written are discarded, counted and logged: every orphan is accounted for', async () => {
    await db.sql`
      insert into audit_events (occurred_at, actor)
      select timestamptz '2020-05-01 00:00:00+00' + make_interval(secs => g), 'actor-' || g from generate_series(1, 300) g`;
    const registry = new Registry();
    const small = defineArchiveSpec({ ...audit, batchSize: 100 });
    let calls = 0;
    const report = await engine({
      prefix: 'discard',
      specs: [small],
      registry,
      afterStore: async () => {
        if (++calls === 1) throw new Error('first batch dies');
      },
    }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 0, outcome: 'failed' });
    expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(300);
    expect(await ledgerCount()).toBe(0);
    const outcomes = Object.fromEntries((await registry.getSingleMetric('archive_batches_total')!.get()).values.map((v) => [v.labels.outcome, v.value]));
    const store = storeFor(server);
    stores.push(store);
    let orphans = 0;
    for await (const _ of store.list('discard/lab/audit_events/')) orphans++;
    expect(outcomes.failed).toBe(1);
    expect(orphans).toBe(1 + (outcomes.discarded ?? 0));
  });
});

describe('fixpoint variants', () => {
  it('terminal status: only terminal rows are archived', async () => {
    await seedJobs(['open', 'running', 'done', 'failed']);
    await engine({ specs: [jobs] }).runCycle();
    expect((await db.sql`select status from jobs order by status`).map((r) => r.status)).toEqual(['open', 'running']);
  });

  it('terminal AND quiescent for N months (bound as a parameter)', async () => {
    await db.sql`
      insert into jobs (id, created_at, status, finished_on) values
        (gen_random_uuid(), now() - interval '2 years', 'done', current_date - interval '13 months'),
        (gen_random_uuid(), now() - interval '2 years', 'done', current_date - interval '11 months'),
        (gen_random_uuid(), now() - interval '2 years', 'done', null),
        (gen_random_uuid(), now() - interval '2 years', 'open', current_date - interval '20 months')`;
    const quiescent = defineArchiveSpec({ ...jobs, fixpoint: fixpoints.terminalQuiescent('status', ['done'], { since: 'finished_on', months: 12 }), mutableColumns: [] });
    const report = await engine({ specs: [quiescent] }).runCycle();
    expect(report.tables[0]).toMatchObject({ rows: 1 });
    expect((await db.sql`select status, finished_on is null as no_date from jobs order by finished_on nulls last`).map((r) => `${r.status}${r.no_date ? ' (none)' : ''}`)).toEqual(['open', 'done', 'done (none)']);
  });
});
