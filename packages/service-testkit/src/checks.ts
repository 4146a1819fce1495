import { LOCK_KEYS, withDedicatedSession, type Sql } from '@craig/db';
import { pruneTransportTables } from '@craig/mq';
import { ArchiveRunner, createArchiveEngine, readLedger, type ArchiveEngine, type ArchiveEngineOptions, type BatchArchivedHook, type LedgerRow } from '@craig/retention';
import { eventually, type TestDatabase } from '@craig/testkit';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import { ADMIN_TOKEN, type ArchiveHarness } from './harness.ts';
import { call, counterValue, type Json } from './fixtures.ts';

/** A list query refused with a typed 400 `invalid_request` that names the parameter and the value (also in the message). */
export async function expectRefusedQuery(app: FastifyInstance, url: string, parameter: string, value: unknown): Promise<void> {
  const res = await call(app, 'GET', url);
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: 'invalid_request', parameter, value });
  if (typeof value === 'string') expect(res.body.error.message).toContain(JSON.stringify(value));
}

/**
 * The event admin routes (registerEventAdminRoutes): replay refused without the token and
 * answered with it (a window of `windowMs` up to now, default a day), and (unless
 * `redrive: false`) redrive answered with it. Returns the replay body.
 */
export async function expectEventAdminRoutes(app: FastifyInstance, options: { readonly redrive?: boolean; readonly windowMs?: number } = {}): Promise<Json> {
  const replay = { from: new Date(Date.now() - (options.windowMs ?? 86_400_000)).toISOString(), to: new Date().toISOString() };
  expect((await app.inject({ method: 'POST', url: '/v1/admin/events/replay', payload: replay })).statusCode).toBe(401);
  const ok = await app.inject({ method: 'POST', url: '/v1/admin/events/replay', payload: replay, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(ok.statusCode).toBe(200);
  if (options.redrive !== false) {
    const redrive = await app.inject({ method: 'POST', url: '/v1/admin/events/redrive', payload: {}, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(redrive.statusCode).toBe(200);
  }
  return ok.json();
}

/** Health names the service, readiness answers 200, and the metrics include `metric`. */
export async function expectServiceEndpoints(app: FastifyInstance, service: string, metric: string): Promise<void> {
  expect((await call(app, 'GET', '/healthz')).body).toEqual({ status: 'ok', service });
  expect((await call(app, 'GET', '/readyz')).status).toBe(200);
  expect((await app.inject({ method: 'GET', url: '/metrics' })).body).toContain(metric);
}

/** An archive cycle that rolled back left nothing behind: no staged announcement, no ledger row. */
export async function expectNothingArchived(sql: Sql): Promise<void> {
  expect(await sql`select event_type from event_outbox`).toEqual([]);
  expect(await readLedger(sql)).toEqual([]);
}

/**
 * One announcement per archived batch (announceArchivedBatches from @craig/retention), staged in
 * its transaction: the event id is the archive id, the payload says where the object is and what it holds.
 */
export async function expectBatchAnnouncements(sql: Sql, eventType: string, ledger: readonly LedgerRow[]): Promise<void> {
  const events = await sql<{ event_id: string; event_type: string; payload: Record<string, unknown> }[]>`select event_id::text, event_type, payload from event_outbox order by id`;
  expect(events).toEqual(
    ledger.map((e) => ({
      event_id: e.archiveId,
      event_type: eventType,
      payload: { archiveId: e.archiveId, table: e.table, key: e.key, rows: e.rowCount, bytes: e.bytes, sha256: e.sha256, minKey: e.minKey, maxKey: e.maxKey, minTs: expect.any(String), maxTs: expect.any(String) },
    })),
  );
}

/**
 * Run the archive timer loop (as the service composes it) until its first cycle completed;
 * returns `stop`, which aborts the loop and waits for it.
 */
export async function startTimerLoop(engine: ArchiveEngine, registry: Registry): Promise<() => Promise<void>> {
  const stop = new AbortController();
  const loop = new ArchiveRunner({ engine, everyMinutes: 60, registry, initialDelayMs: 0 }).run(stop.signal);
  await eventually(async () => expect(await counterValue(registry, 'archive_cycles_total', { status: 'completed', trigger: 'timer' })).toBe(1), { timeoutMs: 10_000 });
  return async () => {
    stop.abort();
    await loop;
  };
}

/**
 * A second archive engine on an archive harness's database (as its runtime role) and store
 * (prefix `archive`), as the service configures its own: for cycles with a different `onBatchArchived` hook.
 */
export function archiveEngineOn(h: ArchiveHarness<unknown>, options: Pick<ArchiveEngineOptions, 'service' | 'specs' | 'hotWindowDays' | 'onBatchArchived'>): ArchiveEngine {
  return createArchiveEngine({ ...options, databaseUrl: h.runtimeUrl, store: h.store, prefix: 'archive' });
}

/** An `onBatchArchived` hook that stages through `hook` and then throws, as a crash after staging would. */
export function crashAfter(hook: BatchArchivedHook): BatchArchivedHook {
  return async (tx, batch) => {
    await hook(tx, batch);
    throw new Error('crash after staging the announcement');
  };
}

/**
 * The transport sweep (`pruneTransportTables`, 30/31-day windows) on a demo-seeded database:
 * it deletes aged published outbox rows, exactly the `agedInbox` dedup records, and leaves the
 * `pending` unpublished rows.
 */
export async function expectTransportSweep(db: TestDatabase, service: string, expected: { readonly agedInbox: number; readonly pending: number }): Promise<void> {
  const result = await pruneTransportTables({ databaseUrl: db.url, service, retention: { outboxDays: 30, inboxDays: 31 }, registry: new Registry() });
  expect(result.outboxDeleted).toBeGreaterThan(0);
  expect(result.inboxDeleted).toBe(expected.agedInbox);
  const [after] = await db.sql`select (select count(*) from event_outbox where published_at is null)::int as pending`;
  expect(after!.pending).toBe(expected.pending);
}

/**
 * `POST /v1/admin/archive/run` needs the admin token (401 without it or with a wrong one), and
 * answers 409 `archive_lease_held` (retryable, naming `service`) while another session holds the
 * archive lease, counted as a `lease_held` admin cycle.
 */
export async function expectArchiveRunGuarded(h: ArchiveHarness<unknown>, service: string): Promise<void> {
  expect((await call(h.app, 'POST', '/v1/admin/archive/run')).status).toBe(401);
  expect((await call(h.app, 'POST', '/v1/admin/archive/run', { token: 'wrong-token-wrong-token' })).status).toBe(401);
  const held = await withDedicatedSession(
    h.db.url,
    async (other) => {
      expect(await other.tryAdvisoryLock(LOCK_KEYS.archiveLease)).toBe(true);
      return call(h.app, 'POST', '/v1/admin/archive/run', { token: ADMIN_TOKEN });
    },
    { service: 'other-archiver' },
  );
  expect(held.status).toBe(409);
  expect(held.body.error).toMatchObject({ code: 'archive_lease_held', service, retryable: true });
  expect(await counterValue(h.registry, 'archive_cycles_total', { status: 'lease_held', trigger: 'admin' })).toBe(1);
}

/**
 * The archive ledger holds exactly `expected` ([table, rows] in ledger order), and the first
 * object's key is `archive/<service>/<table>/<yyyy>/<mm>/<archive id>.ndjson.gz`. Returns the ledger.
 */
export async function expectLedger(sql: Sql, service: string, expected: readonly (readonly [string, number])[]): Promise<LedgerRow[]> {
  const ledger = await readLedger(sql);
  expect(ledger.map((e) => [e.table, e.rowCount])).toEqual(expected);
  expect(ledger[0]!.key).toMatch(new RegExp(`^archive/${service}/${expected[0]![0]}/\\d{4}/\\d{2}/[0-9a-f-]{36}\\.ndjson\\.gz$`));
  return ledger;
}
