// The shipped alerts and dashboard (ops/): promtool checks and unit-tests the rules (every alert
// fires in one case and stays quiet in another), every dashboard query parses, the devstack's
// scrape config is a valid Prometheus config, and every metric an alert or a panel names is
// exported by some service, read from the real `GET /metrics` of each service's main.ts.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ADMIN_TOKEN, objectStoreEnv, serviceEnv, startMain, waitReady } from '@craig/service-testkit';
import { SERVICE_NAMES, type ServiceName } from '@craig/settings';
import { freePort, s3, testDatabase, type S3TestServer, type TestDatabase } from '@craig/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runXtask, WORKSPACE_ROOT } from '../run.ts';
import { capture } from '../test-io.ts';
import { exportedNames, metricNames } from './promql.ts';

const OPS = join(WORKSPACE_ROOT, 'ops');
const ALERTS = join(OPS, 'prometheus/alerts.yml');
const ALERT_TESTS = join(OPS, 'prometheus/alerts.test.yml');
const DASHBOARD = join(OPS, 'grafana/craig.json');

/** promtool from Debian's prometheus package (.ci/run installs it); absent, this fails, never skips. */
function promtool(...args: string[]): { code: number | null; output: string } {
  const run = spawnSync('promtool', args, { encoding: 'utf8', cwd: OPS });
  if (run.error) throw new Error(`promtool is not on PATH (${run.error.message}): install Debian's prometheus package (apt-get install -y prometheus), as .ci/run does`);
  return { code: run.status, output: `${run.stdout}${run.stderr}` };
}

interface Rule {
  readonly alert: string;
  readonly expr: string;
}
interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: ReadonlyArray<{ readonly expr: string }>;
}

let dir: string;
let rules: Rule[];
let panels: Panel[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'craig-ops-'));
  rules = (parse(await readFile(ALERTS, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
  panels = (JSON.parse(await readFile(DASHBOARD, 'utf8')) as { panels: Panel[] }).panels;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const queries = () => panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

describe('ops/prometheus/alerts.yml', () => {
  it('passes promtool check rules and promtool test rules', () => {
    const check = promtool('check', 'rules', ALERTS);
    expect(check.code, check.output).toBe(0);
    expect(check.output).toContain(`SUCCESS: ${rules.length} rules found`);
    const test = promtool('test', 'rules', ALERT_TESTS);
    expect(test.code, test.output).toBe(0);
    expect(test.output).toContain('SUCCESS');
  });

  it('has every alert the operations guide promises, each with a test that fires and one that does not', async () => {
    expect(rules.map((r) => r.alert).sort()).toEqual(
      [
        'CraigPruneLatched',
        'CraigPruneNotRunning',
        'CraigPruneFailing',
        'CraigOutboxBacklogGrowing',
        'CraigOutboxParkedGrowing',
        'CraigDedupHorizonViolated',
        'CraigConsumerDeadLettering',
        'CraigDeadLettersUnconsumed',
        'CraigArchiveOverrun',
        'CraigArchiveFailing',
        'CraigArchiveForeignObject',
        'CraigCleanupJobStuck',
      ].sort(),
    );
    const tests = (parse(await readFile(ALERT_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> }).tests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules) {
      const cases = tests.filter((t) => t.alertname === alert);
      expect(cases.some((t) => t.exp_alerts.length > 0), `${alert} has a case that fires`).toBe(true);
      expect(cases.some((t) => t.exp_alerts.length === 0), `${alert} has a case that does not`).toBe(true);
    }
    const documented = await readFile(join(WORKSPACE_ROOT, 'docs/operations.md'), 'utf8');
    for (const { alert } of rules) expect(documented, `docs/operations.md explains ${alert}`).toContain(alert);
  });
});

describe('ops/grafana/craig.json', () => {
  it('has one row per retention class, and every panel query parses', async () => {
    expect(panels.filter((p) => p.type === 'row').map((p) => p.title.split(':')[0])).toEqual([
      'Transport sweep (class 1)',
      'Events between services',
      'Archive-then-prune (class 2)',
      'Bounded fenced cleanup (class 3)',
    ]);
    expect(panels.filter((p) => p.type !== 'row').every((p) => (p.targets ?? []).length > 0)).toBe(true);
    // Each query as a recording rule, the dashboard's variables filled in: promtool parses them all.
    const file = join(dir, 'dashboard-queries.yml');
    const recorded = queries().map((expr, i) => ({ record: `dashboard:query_${i}`, expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$service', '.*') }));
    await writeFile(file, JSON.stringify({ groups: [{ name: 'dashboard', rules: recorded }] }));
    const check = promtool('check', 'rules', file);
    expect(check.code, check.output).toBe(0);
    expect(check.output).toContain(`SUCCESS: ${recorded.length} rules found`);
  });
});

describe('pnpm xtask devstack --print-scrape-config', () => {
  it('prints a Prometheus config promtool accepts, with the alert rules and a service-labelled target per port', async () => {
    const stdout = capture();
    expect(await runXtask(['devstack', '--print-scrape-config', '--port-base', '9300'], { env: {}, stdout })).toBe(0);
    const file = join(dir, 'prometheus.yml');
    await writeFile(file, stdout.text());
    const check = promtool('check', 'config', file);
    expect(check.code, check.output).toBe(0);
    expect(check.output).toContain(`SUCCESS: 12 rules found`);
    const config = parse(stdout.text()) as { scrape_configs: Array<{ static_configs: Array<{ targets: string[]; labels: { service: string } }> }> };
    expect(config.scrape_configs[0]!.static_configs.map((c) => [c.labels.service, c.targets[0]])).toEqual(SERVICE_NAMES.map((name, i) => [name, `127.0.0.1:${9300 + i}`]));
  });
});

describe('every metric an alert or a dashboard panel names', () => {
  let bus: TestDatabase;
  let store: S3TestServer;
  const dbs: TestDatabase[] = [];
  beforeAll(async () => {
    [bus, store] = await Promise.all([testDatabase({ prefix: 'ops_bus', max: 1 }), s3({ conditional: true, bucket: 'ops-metrics' })]);
  });
  afterAll(async () => {
    await Promise.all([...dbs.map((d) => d.drop()), bus?.drop(), store?.stop()]);
  });

  /** One service's main.ts, as an operator runs it, until it answers /readyz; its /metrics page. */
  async function metricsOf(service: ServiceName): Promise<string> {
    const db = await testDatabase({ prefix: service === 'inventory' ? 'inventory_t' : `ops_${service}`, max: 1 });
    dbs.push(db);
    const port = await freePort();
    const env: Record<string, string> = { ...serviceEnv(service, { databaseUrl: db.url, busDatabaseUrl: bus.url, adminToken: ADMIN_TOKEN, port }), [`CRAIG_${service.toUpperCase()}__LOG_LEVEL`]: 'warn' };
    if (service === 'security' || service === 'rules' || service === 'exchange') Object.assign(env, objectStoreEnv(service, store));
    if (service === 'inventory') env.CRAIG_INVENTORY__CLEANUP_ALLOWED_DATABASES = 'inventory_t*';
    const main = startMain(pathToFileURL(join(WORKSPACE_ROOT, 'services', service, 'src/main.ts')), env);
    try {
      await waitReady(port, 60_000).catch((error: unknown) => {
        throw new Error(`${service} did not get ready: ${(error as Error).message}\n${main.output()}`);
      });
      return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    } finally {
      const { code } = await main.terminate();
      expect(code, `${service} stops cleanly`).toBe(0);
    }
  }

  it('is exported by some service (their real /metrics, each main.ts in turn)', { timeout: 300_000 }, async () => {
    const exported = new Map<string, ServiceName[]>();
    // One at a time: eight services' pools at once would crowd the shared test server.
    for (const service of SERVICE_NAMES) {
      for (const name of exportedNames(await metricsOf(service))) exported.set(name, [...(exported.get(name) ?? []), service]);
    }
    const named = new Map<string, string[]>();
    for (const r of rules) for (const m of metricNames(r.expr)) named.set(m, [...(named.get(m) ?? []), `alert ${r.alert}`]);
    for (const p of panels) for (const t of p.targets ?? []) for (const m of metricNames(t.expr)) named.set(m, [...(named.get(m) ?? []), `panel "${p.title}"`]);
    // The check is only as good as the extraction: a sample of what must be found.
    expect([...named.keys()]).toEqual(expect.arrayContaining(['event_prune_cap_latched', 'dedup_horizon_violations_total', 'cleanup_step_seconds_bucket', 'archive_foreign_objects_total', 'security_dead_letters_total']));
    const missing = [...named].filter(([m]) => !exported.has(m)).map(([m, where]) => `${m} (${where.join(', ')})`);
    expect(missing, 'metrics no service exports').toEqual([]);
    // Where the service-specific ones come from.
    expect(exported.get('security_dead_letters_total')).toEqual(['security']);
    expect(exported.get('cleanup_jobs_active')).toEqual(['inventory']);
    expect(exported.get('archive_overdue_rows')?.sort()).toEqual(['exchange', 'rules', 'security']);
    expect(exported.get('dedup_horizon_violations_total')?.sort()).toEqual(['exchange', 'financial', 'placements', 'rules', 'safety', 'security']);
  });
});
