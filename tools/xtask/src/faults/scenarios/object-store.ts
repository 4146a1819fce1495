// The object store misbehaving under the security service's archiver: down (the S3 server
// killed, then back at the same endpoint), answering 500s, 409s, stalling past the 180 s budget,
// and a foreign object appearing at the key being written. In every case no hot row may be
// deleted unless its object was written and verified, the archiver gives up within its bounds
// instead of hammering, and once the store behaves every row is archived exactly once.
import { STORE_BOUNDS } from '@craig/store';
import { agedLeft, ARCHIVE_SEED, archiveStack, auditCounts, checkArchivedOnce, cyclesDone } from './archive-common.ts';
import { count } from '../probes.ts';
import { Outcome, type FaultScenario } from '../scenario.ts';
import type { FaultService } from '../stack.ts';
import { sleep, waitFor } from '../wait.ts';

const seeded = ARCHIVE_SEED.aged + ARCHIVE_SEED.deadLetters;

/** Ask for a cycle now (409: one is running already, which is as good). */
async function archiveNow(service: FaultService): Promise<void> {
  const res = await service.request('POST', '/v1/admin/archive/run');
  if (res.status !== 200 && res.status !== 409) throw new Error(`POST /v1/admin/archive/run: HTTP ${res.status} ${JSON.stringify(res.body)}`);
}

/** Wait until every aged row is archived, asking for a cycle every `everyMs` meanwhile. */
async function archivedAll(service: FaultService, sql: Parameters<typeof agedLeft>[0], what: string, everyMs = 15_000): Promise<void> {
  let asked = performance.now();
  await waitFor(what, async () => {
    if ((await agedLeft(sql)) === 0) return true;
    if (performance.now() - asked > everyMs) {
      asked = performance.now();
      await archiveNow(service);
    }
    return false;
  }, { timeoutMs: 240_000, intervalMs: 250 });
}

export const s3Down: FaultScenario = {
  name: 's3-down',
  summary: 'the S3 server killed before the archive cycle, back at the same endpoint seconds later',
  fast: true,
  async run(ctx) {
    const out = new Outcome('S3 server SIGKILLed; restarted 5 s into the cycle');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    const port = Number(new URL(store.endpoint).port);
    process.kill(store.pid!, 'SIGKILL');
    const security = await stack.start('security', settings);
    // The timer's first cycle starts 4 s after the start and finds nothing listening.
    await sleep(10_000);
    const during = await auditCounts(sql);
    out.equal('ledger entries while the store is down', during.ledgerEntries, 0);
    out.equal('aged rows hot while the store is down', await agedLeft(sql), seeded);
    const back = performance.now();
    await ctx.s3({ port, directory: store.directory });
    // The operations in flight retry with backoff inside their 180 s budget and get through.
    await archivedAll(security, sql, 'every aged row archived once the store is back');
    out.recoverMs = performance.now() - back;
    out.equal('restarts (none needed)', security.supervisor.restarts, 0);
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3Errors: FaultScenario = {
  name: 's3-500',
  summary: 'the store answers three 500s to archive PUTs',
  fast: true,
  async run(ctx) {
    const out = new Outcome('3 × HTTP 500 on PUT');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    await store.inject({ method: 'PUT', status: 500, times: 3 });
    const started = performance.now();
    const security = await stack.start('security', settings);
    // The SDK retries a 500 with backoff; the first cycle gets through by itself.
    await waitFor('the first cycle to archive every aged row', async () => (await agedLeft(sql)) === 0, { timeoutMs: 120_000, intervalMs: 250 });
    out.recoverMs = performance.now() - started;
    const puts = (await store.requests()).filter((r) => r.method === 'PUT');
    out.equal('PUTs answered 500', puts.filter((r) => r.status === 500).length, 3);
    // The last batch's commit empties the table a moment before the cycle ends and is counted.
    await waitFor('the cycle to be counted', async () => (await cyclesDone(security)) >= 1, { timeoutMs: 30_000, intervalMs: 100 });
    out.equal('cycles it took', await cyclesDone(security), 1);
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3ErrorsPersistent: FaultScenario = {
  name: 's3-500-persistent',
  summary: 'every archive PUT answered 500 until the fault is cleared',
  fast: false,
  async run(ctx) {
    const out = new Outcome('HTTP 500 on every PUT, then cleared');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    await store.inject({ method: 'PUT', status: 500, times: -1 });
    const security = await stack.start('security', settings);
    await waitFor('the first cycle to give up', async () => (await cyclesDone(security)) >= 1, { timeoutMs: STORE_BOUNDS.operationBudgetMs + 60_000, intervalMs: 500 });
    const failedPuts = (await store.requests()).filter((r) => r.method === 'PUT' && r.status === 500).length;
    out.equal('ledger entries after the failed cycle', (await auditCounts(sql)).ledgerEntries, 0);
    out.equal('aged rows hot after the failed cycle', await agedLeft(sql), seeded);
    // Bounded: each batch in flight tries at most 1 + maxRetries times, and the table stops at its first failure.
    out.atMost('PUT attempts in the failed cycle (backs off, gives up)', failedPuts, 3 * (STORE_BOUNDS.maxRetries + 1));
    await sleep(10_000);
    out.equal('PUTs after the cycle gave up (no hammering until the next cycle)', (await store.requests()).filter((r) => r.method === 'PUT').length, failedPuts);
    await store.clearFaults();
    const cleared = performance.now();
    await archivedAll(security, sql, 'every aged row archived after the fault cleared');
    out.recoverMs = performance.now() - cleared;
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3Conflict: FaultScenario = {
  name: 's3-409',
  summary: 'the store answers 409 ConditionalRequestConflict to two archive PUTs',
  fast: true,
  async run(ctx) {
    const out = new Outcome('2 × HTTP 409 on PUT');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    await store.inject({ method: 'PUT', status: 409, times: 2 });
    const started = performance.now();
    await stack.start('security', settings);
    await waitFor('the first cycle to archive every aged row', async () => (await agedLeft(sql)) === 0, { timeoutMs: 120_000, intervalMs: 250 });
    out.recoverMs = performance.now() - started;
    out.equal('PUTs answered 409 (retried by the store)', (await store.requests()).filter((r) => r.method === 'PUT' && r.status === 409).length, 2);
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3StallShutdown: FaultScenario = {
  name: 's3-stall-shutdown',
  summary: 'SIGTERM security while an archive PUT stalls (never answered)',
  fast: true,
  async run(ctx) {
    const out = new Outcome('PUT never answered; SIGTERM during the stall');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    await store.inject({ method: 'PUT', hang: true, times: -1 });
    const security = await stack.start('security', settings);
    await waitFor('an archive PUT stalled', async () => (await store.requests()).some((r) => r.method === 'PUT' && r.status === 0), { timeoutMs: 60_000, intervalMs: 200 });
    const asked = performance.now();
    await security.stop(STORE_BOUNDS.operationBudgetMs);
    const stopMs = performance.now() - asked;
    out.atMost('shutdown during the stalled upload (budget 180 s)', Math.round(stopMs), STORE_BOUNDS.operationBudgetMs, ' ms');
    const stopped = (await security.log()).filter((l) => l.msg === 'stopped').map((l) => l.step);
    out.check('stopped in order, none killed', stopped.includes('database pool') && !(await security.log()).some((l) => l.msg === 'stop failed'), `steps: ${stopped.join(', ')}`);
    out.equal('ledger entries after the stopped cycle', (await auditCounts(sql)).ledgerEntries, 0);
    out.equal('aged rows hot after the stopped cycle', await agedLeft(sql), seeded);
    await store.clearFaults();
    const again = await stack.start('security', settings);
    await archivedAll(again, sql, 'every aged row archived by the next process');
    out.recoverMs = performance.now() - asked;
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3StallBudget: FaultScenario = {
  name: 's3-stall-budget',
  summary: 'every archive PUT stalls: the cycle gives up at the 180 s budget, rows stay hot',
  fast: false,
  async run(ctx) {
    const out = new Outcome('PUT never answered, past the 180 s budget');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    await store.inject({ method: 'PUT', hang: true, times: -1 });
    const security = await stack.start('security', settings);
    await waitFor('an archive PUT stalled', async () => (await store.requests()).some((r) => r.method === 'PUT' && r.status === 0), { timeoutMs: 60_000, intervalMs: 200 });
    const stalled = performance.now();
    await waitFor('the cycle to give up', async () => (await cyclesDone(security)) >= 1, { timeoutMs: STORE_BOUNDS.operationBudgetMs + 90_000, intervalMs: 1000 });
    const gaveUpMs = performance.now() - stalled;
    out.atMost('the stalled cycle gave up within the budget (+ 30 s slack)', Math.round(gaveUpMs / 1000), STORE_BOUNDS.operationBudgetMs / 1000 + 30, ' s');
    out.equal('ledger entries after the stalled cycle', (await auditCounts(sql)).ledgerEntries, 0);
    out.equal('aged rows hot after the stalled cycle', await agedLeft(sql), seeded);
    await store.clearFaults();
    const cleared = performance.now();
    await archivedAll(security, sql, 'every aged row archived after the stall cleared');
    out.recoverMs = performance.now() - cleared;
    await checkArchivedOnce(out, stack, env, sql);
    return out.result();
  },
};

export const s3ForeignObject: FaultScenario = {
  name: 's3-foreign-object',
  summary: 'a foreign object appears at the key an archive batch is about to write',
  fast: true,
  async run(ctx) {
    const out = new Outcome('foreign bytes planted at an archive key before its write');
    const { store, stack, env, sql, settings } = await archiveStack(ctx);
    const foreign = 'not an archive of ours';
    // The store's precheck (a GET) of an audit_log batch finds another writer's object there.
    await store.inject({ method: 'GET', key: 're:^archive/security/audit_log/', occupy: foreign, times: 1 });
    const security = await stack.start('security', settings);
    await waitFor('the first cycle to finish', async () => (await cyclesDone(security)) >= 1, { timeoutMs: 120_000, intervalMs: 250 });
    const refused = (await security.log()).filter((l) => l.msg === 'archive batch' && l.outcome === 'store_failed' && (l.err as { code?: string } | undefined)?.code === 'foreign_object');
    out.equal('batches refused with foreign_object', refused.length, 1);
    const planted = typeof refused[0]?.key === 'string' ? refused[0].key : '';
    // Batches already written when the refusal stopped the table are discarded: orphans too.
    const discarded = (await security.log()).filter((l) => l.msg === 'archive batch' && l.outcome === 'discarded').map((l) => (typeof l.key === 'string' ? l.key : ''));
    out.equal('ledger entries naming the foreign object', await count(sql, 'archive_ledger', `object_key = '${planted.replace(/'/g, "''")}'`), 0);
    // The table stops at the refused batch; whatever committed before it is in the ledger, nothing else is gone.
    const [audit] = await sql<{ hot: number; archived: number }[]>`
      select (select count(*) from audit_log where received_at < now() - interval '90 days')::int as hot,
             (select coalesce(sum(row_count), 0) from archive_ledger where table_name = 'audit_log')::int as archived`;
    out.equal('aged audit_log rows hot + archived', audit!.hot + audit!.archived, ARCHIVE_SEED.aged);
    out.atLeast('aged audit_log rows still hot (the refused batch)', audit!.hot, 1);
    const started = performance.now();
    await archivedAll(security, sql, 'every aged row archived under new keys', 1_000);
    out.recoverMs = performance.now() - started;
    const bytes = await (await fetch(`${store.endpoint}/${store.bucket}/${planted}`)).text();
    out.equal('the foreign object is untouched', bytes, foreign);
    // The foreign object is under our prefix and in no ledger entry: verification lists it, and
    // the discarded batches' objects, and nothing else.
    await checkArchivedOnce(out, stack, env, sql, [planted, ...discarded]);
    return out.result();
  },
};
