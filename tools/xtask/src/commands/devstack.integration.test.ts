// The devstack as an operator runs it on a machine with nothing installed: `xtask devstack --for
// 45` in a child process with its own embedded PostgreSQL cluster (so the eight services' pools
// never count against the shared test server's connections), the S3 test server and the bus.
// Passing means every service stayed up, a prune cycle deleted its aged history, the archiving
// services archived theirs, and the demo traffic's syncs ended in completed cleanup jobs.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgres, tcpReachable } from '@craig/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../test-browser.ts';
import { capture } from '../test-io.ts';
import { runXtask } from '../run.ts';
import { dropDatabases } from '../devstack/databases.ts';
import { freePortRange } from '../ports.ts';
import pg from 'postgres';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const ARTIFACTS = join(ROOT, '.artifacts');
const EIGHT = ['cases', 'placements', 'safety', 'security', 'rules', 'exchange', 'financial', 'inventory'];
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const prefix = `ds_t${process.pid}_${Date.now().toString(36)}_`;
let stateDir: string | undefined;

afterAll(async () => {
  const admin = await postgres();
  const sql = pg(admin, { max: 1, onnotice: () => {} });
  const names = (await sql<{ datname: string }[]>`select datname from pg_database where starts_with(datname, ${prefix})`).map((r) => r.datname);
  await sql.end();
  await dropDatabases(admin, names);
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

/**
 * The running stack's status page: every service up in /status.json with its invariants
 * verdict computed on its database, and the page in headless Chromium showing all eight (a PNG
 * of it in .artifacts/status-page-devstack.png).
 */
async function checkStatusPage(url: string | undefined): Promise<void> {
  expect(url, 'the banner names the status page').toBeDefined();
  type Service = { name: string; up: boolean; invariants: { results?: Array<{ name: string }> } | null };
  const services = async () => ((await (await fetch(new URL('status.json', url))).json()) as { services: Service[] }).services;
  // Each service's first check runs within 10 s of its being ready.
  await expect
    .poll(async () => (await services()).filter((s) => s.up && s.invariants?.results?.some((r) => r.name === 'prune_latch')).map((s) => s.name), { timeout: 30_000, interval: 1000 })
    .toEqual(EIGHT);
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(url!);
    expect(await page.locator('#services tbody tr').evaluateAll((trs) => trs.map((tr) => `${tr.getAttribute('data-service')} ${tr.getAttribute('data-state')}`))).toEqual(EIGHT.map((s) => `${s} up`));
    expect(await page.locator('section.invariants').count()).toBe(8);
    expect(await page.locator('section.charts svg.chart').count()).toBeGreaterThanOrEqual(8);
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(join(ARTIFACTS, 'status-page-devstack.png'), await page.screenshot({ fullPage: true }));
  } finally {
    await browser.close();
  }
}

describe('xtask devstack', () => {
  it('runs all eight services for 45 s on an embedded cluster: they stay up, aged history is pruned and archived, cleanup jobs complete, and everything stops', async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'craig-devstack-test-'));
    const portBase = await freePortRange(8);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CRAIG_') && k !== 'DATABASE_URL') env[k] = v;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', MAIN, 'devstack', '--for', '45', '--quiet', '--port-base', String(portBase), '--status-port', '0', '--state-dir', stateDir, '--db-prefix', prefix, '--history-rows', '5000'],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let pageChecked: Promise<void> | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      // While the stack runs: its status page, from the address in the banner.
      if (!pageChecked && out.includes('stack up')) {
        pageChecked = checkStatusPage(/status page (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)?.[1]);
        // Awaited (and so reported) once the run has ended; not an unhandled rejection before.
        pageChecked.catch(() => {});
      }
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

    expect(code, out).toBe(0);
    expect(pageChecked, out).toBeDefined();
    await pageChecked;
    expect(out).toContain('embedded 15');
    expect(out).not.toContain('not built yet');
    for (const service of EIGHT) {
      expect(out).toContain(`${service}: seeded aged history`);
      expect(out).toContain(`${service}: stayed up`);
      const swept = new RegExp(`${service}: pruned ([\\d,]+) rows`).exec(out);
      expect(swept, `${service}\n${out}`).not.toBeNull();
      expect(Number(swept![1]!.replaceAll(',', '')), service).toBeGreaterThan(0);
    }
    // Each ran as its runtime role, logged in with a password on the embedded cluster's scram
    // authentication, granted by the server's login, and was not warned of a privileged login.
    for (const service of ['cases', 'placements', 'safety', 'security', 'rules', 'exchange', 'financial', 'inventory']) {
      const log = await readFile(join(stateDir, 'logs', `${service}.log`), 'utf8');
      const role = service === 'inventory' ? 'craig_inventory_runtime' : `craig_${service}_app`;
      expect(log, service).toContain(`"role":"${role}"`);
      expect(log, service).toContain('"msg":"runtime role granted"');
      expect(log, service).not.toContain('through SET ROLE');
    }
    // The archiving services archived their aged audit rows: their first timed cycle runs 20–40 s
    // after they start (ARCHIVE_FIRST_CYCLE_DELAY_SECONDS=20), after the seeding; nothing asks for one.
    expect(out).toMatch(/security: archived audit_log [1-9][\d,]*/);
    expect(out).toMatch(/rules: archived rule_evaluations [1-9][\d,]*/);
    expect(out).toMatch(/exchange: archived ssa_transport_handoffs [1-9][\d,]*, ssa_screening_members [1-9][\d,]*, ssa_screening_runs [1-9][\d,]*/);
    // 60 % of 5,000 aged published outbox rows, 30 % aged inbox records (and the drained pending rows).
    const pruned = /inventory: pruned ([\d,]+) rows \(event_outbox ([\d,]+), event_inbox ([\d,]+)\)/.exec(out);
    expect(pruned, out).not.toBeNull();
    expect(Number(pruned![2]!.replaceAll(',', ''))).toBeGreaterThanOrEqual(3000);
    expect(Number(pruned![3]!.replaceAll(',', ''))).toBe(1500);
    // The service-local sweeps keep the transport sweep's 20 s cadence (not an hour): their aged
    // terminal rows went too.
    expect(out).toMatch(/exchange: pruned [\d,]+ rows \(.*exchange_send_jobs [1-9][\d,]*/);
    expect(out).toMatch(/financial: pruned [\d,]+ rows \(.*subsidy_reconcile_queue [1-9][\d,]*/);
    expect(out).toMatch(/inventory: cleanup jobs [1-9][\d,]* prune-library completed/);
    expect(out).toContain('result: ok');
    // Stopped: nothing listens on its port any more.
    expect(await tcpReachable('127.0.0.1', portBase + 7, 300)).toBe(false);
  }, 150_000);

  it('never seeds demo history into a database that existed before it (CRAIG_<SVC>__DATABASE_URL)', async () => {
    const admin = await postgres();
    const existing = `${prefix}existing`;
    const sql = pg(admin, { max: 1, onnotice: () => {} });
    await sql`create database ${sql(existing)}`;
    await sql.end();
    const dir = await mkdtemp(join(tmpdir(), 'craig-devstack-test-'));
    try {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('CRAIG_')) env[k] = v;
      env.CRAIG__DATABASE_URL = admin;
      const url = new URL(admin);
      url.pathname = `/${existing}`;
      env.CRAIG_INVENTORY__DATABASE_URL = url.toString();
      // Only inventory: the case needs one service, and eight on the shared server would crowd its connections.
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'devstack', '--only', 'inventory', '--for', '2', '--quiet', '--status-port', 'off', '--port-base', String(await freePortRange(8)), '--state-dir', dir, '--db-prefix', prefix, '--history-rows', '100'], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      expect(await new Promise<number | null>((resolve) => child.once('exit', resolve)), out).toBe(0);
      expect(out).toContain('inventory: its database existed before the devstack created any: no demo history seeded into it');
      // The service installed its schema there (the database is on its allow-list) and ran, but no history went in.
      const db = pg(url.toString(), { max: 1, onnotice: () => {} });
      const [row] = await db`select (select count(*)::int from event_outbox) as outbox, (select count(*)::int from servers where external_id = 'seed-server') as seeded`;
      await db.end();
      expect(row).toEqual({ outbox: 0, seeded: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('refuses a bad flag with a usage error naming the value', async () => {
    const stderr = capture();
    expect(await runXtask(['devstack', '--for', '45s'], { stdout: capture(), stderr, root: ROOT })).toBe(2);
    expect(stderr.text()).toContain('--for "45s": must be a whole number from 1 to 604800');
    const only = capture();
    expect(await runXtask(['devstack', '--only', 'inventory,ledger'], { stdout: capture(), stderr: only, root: ROOT })).toBe(2);
    expect(only.text()).toContain('"ledger" is not a craig service');
  });
});
