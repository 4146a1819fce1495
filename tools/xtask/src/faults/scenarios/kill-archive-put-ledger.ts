// kill -9 between PUT and ledger: the security service's archiver has written (and verified)
// an archive object and is about to commit its ledger row and the delete when it is SIGKILLed.
// The window is held open from outside: a session of the scenario's own holds `archive_ledger`
// in SHARE mode, so the ledger insert waits. After the restart every archived row must be in
// exactly one verified ledger entry, `archive-fetch --verify` must list the objects the killed
// process wrote as orphans (and nothing else), `archive-fetch` must return every row once, and
// no hot row may have been deleted without its ledger entry.
import { agedLeft, auditCounts, fetchWithXtask, seedAudit, storedKeys, verifyWithXtask } from './archive-common.ts';
import { count, waitingOnLock } from '../probes.ts';
import { Outcome, type FaultScenario } from '../scenario.ts';
import { sleep, waitFor } from '../wait.ts';

const AGED = 12_000;
const FRESH = 300;
const DEAD_LETTERS = 100;

export const killArchivePutLedger: FaultScenario = {
  name: 'kill-archive-put-ledger',
  summary: "SIGKILL security's archiver between an object's PUT and its ledger commit",
  fast: true,
  async run(ctx) {
    const out = new Outcome('SIGKILL after the PUT, before the ledger commit (held on a table lock)');
    const store = await ctx.s3();
    const stack = await ctx.stack({ transport: 'postgres', objectStore: store });
    const env = await stack.env('security');
    await stack.migrate('security', env);
    const sql = stack.sql('security');
    await seedAudit(sql, { aged: AGED, fresh: FRESH, deadLetters: DEAD_LETTERS });
    const before = await auditCounts(sql);

    const holder = await sql.reserve();
    ctx.defer(() => holder.release());
    await holder`begin`;
    await holder`lock table archive_ledger in share mode`;

    // Its first timer cycle runs 5 s after the start.
    const security = await stack.start('security');
    await waitFor('the ledger commit waiting on the held table', async () => (await waitingOnLock(sql, 'security:archive')).length > 0, { timeoutMs: 60_000, intervalMs: 25 });
    const killedAt = performance.now();
    security.kill('SIGKILL');
    // Whatever PUT was in flight died with the process; what the store holds now is what it wrote.
    await sleep(1000);
    const written = await storedKeys(store);
    const atKill = await auditCounts(sql);
    out.atLeast('objects written before the kill (the batch whose commit waited, and those behind it)', written.length, 1);
    out.equal('hot rows deleted before any ledger entry', before.hot - atKill.hot, 0);
    out.equal('aged rows still hot at the kill', await count(sql, 'audit_log', `payload->>'subject' like 'aged %'`), AGED);
    out.equal('ledger entries at the kill', atKill.ledgerEntries, 0);
    await holder`commit`;

    await security.up();
    await waitFor('the restarted archiver to archive every aged row', async () => (await agedLeft(sql)) === 0, { timeoutMs: 120_000, intervalMs: 250 });
    out.recoverMs = performance.now() - killedAt;
    const after = await auditCounts(sql);
    out.equal('rows archived (ledger)', after.ledgerRows, AGED + DEAD_LETTERS);
    out.equal('aged rows left hot', await count(sql, 'audit_log', `payload->>'subject' like 'aged %'`) + (await count(sql, 'dead_letter_audit')), 0);
    const fresh = await count(sql, 'audit_log', `payload->>'subject' like 'fresh %'`);
    out.equal('fresh rows kept hot', fresh, FRESH);

    const verify = await verifyWithXtask(stack, env);
    out.equal('archive-fetch --verify: entries that failed verification', verify.failed, 0);
    out.equal('archive-fetch --verify: rows in verified entries', verify.rows, AGED + DEAD_LETTERS);
    const sameOrphans = [...verify.orphans].sort().join(',') === [...written].sort().join(',');
    out.check('archive-fetch --verify: orphans are exactly the objects the killed process wrote', sameOrphans, `${verify.orphans.length} orphans listed, ${written.length} objects written before the kill${sameOrphans ? '' : `: listed ${verify.orphans.join(', ')}; written ${written.join(', ')}`}`);
    const fetched = await fetchWithXtask(stack, env);
    const audit = fetched.rows.get('audit_log');
    const dead = fetched.rows.get('dead_letter_audit');
    out.equal('archive-fetch exit code', fetched.code, 0);
    out.equal('audit_log rows fetched', audit?.total ?? 0, AGED);
    out.equal('audit_log rows fetched twice', (audit?.total ?? 0) - (audit?.distinct ?? 0), 0);
    out.equal('dead_letter_audit rows fetched', dead?.total ?? 0, DEAD_LETTERS);
    out.equal('restarts by the supervisor', security.supervisor.restarts, 1);

    out.expected = AGED + DEAD_LETTERS + FRESH;
    out.kept = (audit?.distinct ?? 0) + (dead?.distinct ?? 0) + fresh;
    out.lost = out.expected - out.kept;
    out.duplicated = (audit ? audit.total - audit.distinct : 0) + (dead ? dead.total - dead.distinct : 0);
    return out.result();
  },
};
