// `pnpm xtask devstack`: PostgreSQL (embedded, or the server the settings name), the S3 test
// server, the transport, every built service as a supervised child, aged history, demo traffic
// and the live view; stopped in order: traffic, services, then the servers they use.
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import type { Writable } from 'node:stream';
import { createClient } from '@craig/db';
import { loadServiceSettings, MIN_ADMIN_TOKEN_LENGTH, SERVICE_NAMES, type ServiceSettings } from '@craig/settings';
import { s3, startEmbeddedPostgres, tcpReachable, type EmbeddedServer, type S3TestServer } from '@craig/testkit';
import { UsageError, writeLine } from '../command.ts';
import { assertAnswers, ensureDatabase, redact, sameServer } from './databases.ts';
import { discoverServices, loadDemo, type BuiltService } from './discover.ts';
import { amqpUrlFrom, childEnv, chooseServer, DEVSTACK_BUCKET, DEVSTACK_PRUNE_EVERY_TICKS, needsServer, serviceEnv, userObjectStore, withDatabase, type StackInfra } from './env.ts';
import { LiveView } from './live-view.ts';
import { DevstackOptionError, statusPortOf, type DevstackOptions } from './options.ts';
import { databaseKey, loadState, saveState } from './state.ts';
import { StatusBoard } from './status-board.ts';
import { summarize } from './summary.ts';
import { ReplicaSet } from './replicas.ts';
import { SupervisedService } from './supervisor.ts';
import { observeAll, runTraffic, seeded, sleep, type Running } from './traffic.ts';

export interface DevstackIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly signal: AbortSignal;
  readonly root: string;
}

/** Run the devstack until `--for` elapses or the signal aborts; returns the exit code. */
export async function runDevstack(options: DevstackOptions, io: DevstackIo): Promise<number> {
  const { built, notBuilt } = discoverServices(io.root);
  const skipped = options.only ? built.filter((s) => !options.only!.includes(s.name)).map((s) => s.name) : [];
  const selected = options.only ? built.filter((s) => options.only!.includes(s.name)) : built;
  for (const name of options.only ?? []) {
    if (notBuilt.includes(name as never)) throw new DevstackOptionError('only', options.only!.join(','), `"${name}" is not built yet (no services/${name}/package.json)`);
  }
  if (selected.length === 0) throw new UsageError('no service to run: none of services/<name>/ exists yet');

  if (options.fresh) await rm(options.stateDir, { recursive: true, force: true });
  const logs = join(options.stateDir, 'logs');
  mkdirSync(logs, { recursive: true });
  // Paths inside the workspace relative to it, others as they are.
  const shown = (p: string) => {
    const r = relative(io.root, p);
    return r === '' ? '.' : r.startsWith('..') || isAbsolute(r) ? p : r;
  };
  const state = await loadState(options.stateDir);
  // 32 random bytes (43 characters); a token remembered from before the 32-character minimum is replaced.
  const remembered = state.adminToken !== undefined && state.adminToken.length >= MIN_ADMIN_TOKEN_LENGTH ? state.adminToken : undefined;
  const adminToken = io.env.CRAIG__ADMIN_TOKEN ?? remembered ?? randomBytes(32).toString('base64url');
  state.adminToken = adminToken;
  await saveState(options.stateDir, state);

  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const stops: Array<{ name: string; stop: () => Promise<unknown> }> = [];
  const devstackLog = join(logs, 'devstack.log');
  let view: LiveView | undefined;
  const event = (line: string) => {
    appendFileSync(devstackLog, `${new Date().toISOString()} ${line}\n`);
    if (view) view.event(elapsed(), line);
    else writeLine(io.stdout, line);
  };

  const running: Running[] = [];
  const banner: string[] = [];
  let verdictCode = 0;
  try {
    // PostgreSQL: the server the settings name, else the embedded cluster in <state-dir>/pg.
    const profiles = selected.map((s) => s.profile);
    let serverUrl: string | undefined;
    let embeddedUrl: string | undefined;
    if (needsServer(profiles, io.env, options.rabbitmq)) {
      const choice = chooseServer(io.env);
      if (choice.kind === 'external') {
        await assertAnswers(choice.url, choice.variable);
        serverUrl = choice.url;
        banner.push(`  PostgreSQL  ${redact(choice.url)} (from ${choice.variable})`);
      } else {
        writeLine(io.stdout, `starting embedded PostgreSQL 15 in ${shown(join(options.stateDir, 'pg'))} ...`);
        const pgLog = join(logs, 'postgres.log');
        // Kept by a child process of its own, so a devstack killed with SIGKILL takes the
        // cluster down with it instead of leaving a postmaster on the data directory.
        const server: EmbeddedServer = await startEmbeddedPostgres({ dataDir: join(options.stateDir, 'pg'), detached: true, process: 'child', logFile: pgLog });
        stops.push({ name: 'PostgreSQL', stop: () => server.stop() });
        serverUrl = server.url;
        embeddedUrl = server.url;
        banner.push(`  PostgreSQL  embedded 15 at ${redact(server.url)} (data ${shown(server.dataDir)}, log ${shown(pgLog)})`);
      }
    }
    if (io.signal.aborted) return 0;

    let transport: StackInfra['transport'] = { kind: 'postgres' };
    if (options.rabbitmq) {
      const amqpUrl = amqpUrlFrom(io.env);
      const u = new URL(amqpUrl);
      if (!(await tcpReachable(u.hostname, Number(u.port || 5672)))) throw new UsageError(`--rabbitmq: nothing answers at ${redact(amqpUrl)} (set AMQP_URL or CRAIG__AMQP_URL)`);
      transport = { kind: 'rabbitmq', amqpUrl };
      banner.push(`  transport   RabbitMQ ${redact(amqpUrl)}`);
    }

    let store: S3TestServer | undefined;
    if (!userObjectStore(io.env)) {
      store = await s3({ process: 'child', directory: join(options.stateDir, 's3'), conditional: true, bucket: DEVSTACK_BUCKET, detached: true });
      const s = store;
      stops.push({ name: 'S3 server', stop: () => s.stop() });
      banner.push(`  S3          ${store.endpoint} bucket ${store.bucket} (objects ${shown(store.directory)}; key ${store.accessKeyId}/${store.secretAccessKey}, path-style)`);
    } else {
      banner.push(`  S3          ${io.env.CRAIG__OBJECT_STORE_ENDPOINT} (from CRAIG__OBJECT_STORE_ENDPOINT)`);
    }

    const infra: StackInfra = {
      serverUrl,
      dbPrefix: options.dbPrefix,
      adminToken,
      portBase: options.portBase,
      transport,
      objectStore: store ? { endpoint: store.endpoint, region: store.region, bucket: store.bucket, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey } : undefined,
    };

    // Settings per service, validated like the service will (every problem at once), and the databases.
    const ports = new Map<number, string>();
    const prepared: Array<{ service: BuiltService; settings: ServiceSettings; env: Record<string, string>; oid: number }> = [];
    for (const service of selected) {
      const env = childEnv(io.env, serviceEnv(service.profile, infra, io.env));
      const settings = loadServiceSettings(service.profile, env);
      const port = settings.http.port;
      if (port === 0) throw new UsageError(`${service.name}: HTTP_PORT 0 is not supported by the devstack (it must know the port)`);
      for (const [i, p] of replicaPorts(port, options.replicas).entries()) {
        const label = i === 0 ? service.name : `${service.name}#${i + 1}`;
        if (ports.has(p)) throw new UsageError(`${label} and ${ports.get(p)} would both listen on port ${p}`);
        ports.set(p, label);
        if (await tcpReachable('127.0.0.1', p, 300)) throw new UsageError(`port ${p} for ${label} is in use (another devstack?); pass --port-base N`);
      }
      const maintenance = (url: string) => (serverUrl && sameServer(url, serverUrl) ? serverUrl : withDatabase(url, 'postgres'));
      const { oid, created } = await ensureDatabase(settings.databaseUrl, maintenance(settings.databaseUrl));
      // Only databases the devstack created get demo history: never one that held data before.
      if (created) state.created[databaseKey(settings.databaseUrl, embeddedUrl !== undefined && sameServer(settings.databaseUrl, embeddedUrl))] = oid;
      if (settings.transport.kind === 'postgres') await ensureDatabase(settings.transport.busDatabaseUrl, maintenance(settings.transport.busDatabaseUrl));
      prepared.push({ service, settings, env, oid });
    }
    await saveState(options.stateDir, state);
    if (transport.kind === 'postgres') banner.push(`  transport   PostgreSQL bus ${redact(prepared[0]!.settings.transport.kind === 'postgres' ? prepared[0]!.settings.transport.busDatabaseUrl : '')}`);

    for (const p of prepared) {
      const owner = createClient(p.settings.databaseUrl, { service: 'devstack', max: 2, statementTimeoutMs: 600_000, idleTimeoutSeconds: 30 });
      stops.push({ name: `${p.service.name} owner pool`, stop: () => owner.end({ timeout: 5 }) });
      const loaded = await loadDemo(p.service);
      const r: Running = {
        service: p.service,
        settings: p.settings,
        owner,
        databaseOid: p.oid,
        demo: 'demo' in loaded ? loaded.demo : undefined,
        counts: new Map(('demo' in loaded ? loaded.demo.tables : []).map((t) => [t, undefined])),
        traffic: false,
        seeding: false,
        seededThisRun: false,
        seedFailed: undefined,
        seedNote: 'missing' in loaded ? `no demo: ${loaded.missing}` : undefined,
        ticks: 0,
        ticking: false,
        lastError: undefined,
        random: seeded(options.seed, p.service.name),
        supervisor: new ReplicaSet(
          replicaPorts(p.settings.http.port, options.replicas).map((port, i) => {
            const label = i === 0 ? p.service.name : `${p.service.name}#${i + 1}`;
            return new SupervisedService({
              name: label,
              root: io.root,
              mainFile: p.service.mainFile,
              env: { ...p.env, [`${p.service.profile.envPrefix}HTTP_PORT`]: String(port) },
              logFile: join(logs, `${label.replace('#', '-')}.log`),
              port,
              onEvent: (line) => event(`${label}: ${line}`),
              // The service is ready (seeded, traffic) once every replica is.
              onReady: () => {
                event(`${label}: ready on http://127.0.0.1:${port}`);
                if (r.supervisor.status === 'up') void onReady(r);
              },
            });
          }),
        ),
      };
      running.push(r);
    }

    banner.unshift(`craig devstack: state in ${shown(options.stateDir)}, logs in ${shown(logs)}`);
    banner.push(`  admin token ${adminToken}  (Authorization: Bearer <token> on /v1/admin/*)`);
    for (const r of running) {
      const urls = r.supervisor.replicas.map((x) => x.url).join(', ');
      banner.push(`  ${r.service.name.padEnd(11)} ${urls}  database ${redact(r.settings.databaseUrl)}  log ${shown(r.supervisor.options.logFile)}${options.replicas > 1 ? ` (and ${r.service.name}-2.log, ...)` : ''}`);
    }
    if (options.replicas > 1) banner.push(`  replicas    ${options.replicas} processes of every service on one database each (the advisory locks keep their sweeps apart)`);
    if (notBuilt.length) banner.push(`  not built yet: ${notBuilt.join(', ')}`);
    if (skipped.length) banner.push(`  not selected (--only): ${skipped.join(', ')}`);
    banner.push(`  sweeps every ${DEVSTACK_PRUNE_EVERY_TICKS} s (EVENT_PRUNE_EVERY_TICKS=${DEVSTACK_PRUNE_EVERY_TICKS}; production keeps the hourly default)`);
    // The rows, invariants and status page the view shares; stopped before the owner pools.
    const board = await StatusBoard.start({ running, absent: { notBuilt, skipped }, startedAt: started, port: statusPortOf(options), events: () => view?.recentEvents() ?? [] });
    stops.push({ name: 'status page', stop: () => board.stop() });
    if (board.url) banner.push(`  status page ${board.url}  (read-only: the table, row counts over time, invariants)`);
    for (const line of banner) writeLine(io.stdout, line);
    const tty = (io.stdout as { isTTY?: boolean }).isTTY === true;
    view = new LiveView(io.stdout, { tty, quiet: options.quiet, header: banner, statusUrl: board.url });

    async function onReady(r: Running): Promise<void> {
      if (r.traffic || r.seeding || !r.demo) return;
      r.seeding = true;
      const key = databaseKey(r.settings.databaseUrl, embeddedUrl !== undefined && sameServer(r.settings.databaseUrl, embeddedUrl));
      const record = state.seeded[key];
      if (record?.oid === r.databaseOid) {
        r.seedNote = `aged history seeded by an earlier run (${record.at}); --fresh or a new --db-prefix seeds again`;
      } else if (state.created[key] !== r.databaseOid) {
        r.seedNote = 'its database existed before the devstack created any: no demo history seeded into it';
        event(`${r.service.name}: ${r.seedNote}`);
      } else if (options.historyRows > 0) {
        event(`${r.service.name}: seeding ${options.historyRows.toLocaleString('en-US')} rows of aged history ...`);
        const t0 = performance.now();
        try {
          await r.demo.seedAgedHistory(r.owner, { rows: options.historyRows });
          state.seeded[key] = { oid: r.databaseOid, at: new Date().toISOString(), rows: options.historyRows };
          await saveState(options.stateDir, state);
          r.seededThisRun = true;
          event(`${r.service.name}: seeded aged history in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        } catch (error) {
          r.seedFailed = (error as Error).message;
          event(`${r.service.name}: seeding aged history failed: ${r.seedFailed}`);
        }
      }
      r.traffic = true;
    }

    for (const r of running) r.supervisor.start();
    const traffic = new AbortController();
    stops.push({ name: 'demo traffic', stop: async () => traffic.abort() });

    // Demo traffic: about once a second per service, never two ticks of one service at once.
    const urlOf = (name: string) => {
      const r = running.find((x) => x.service.name === name);
      // Any replica that is up serves (in turn); a service with none up gets no traffic.
      return r && r.supervisor.up > 0 ? r.supervisor.url : undefined;
    };
    const tickLoop = runTraffic(running, { adminToken, urlOf, signal: traffic.signal, event });

    // Live view: scrape /metrics and count the demo tables every 2 s.
    const observe = () => observeAll(running, event);
    const viewStop = new AbortController();
    const viewLoop = (async () => {
      while (!viewStop.signal.aborted) {
        await observe();
        board.record();
        view.draw(board.rows(), elapsed());
        await sleep(2000, viewStop.signal);
      }
    })();

    // Up: every service ready with its history seeded, or given up on (at most 3 minutes).
    const upBy = performance.now() + 180_000;
    while (!io.signal.aborted && performance.now() < upBy && running.some((r) => !(r.traffic || r.supervisor.status === 'failed' || (r.supervisor.status === 'up' && !r.demo)))) await sleep(250, io.signal);
    let interrupted = io.signal.aborted;
    if (!interrupted) {
      event(options.forSeconds ? `stack up; running for ${options.forSeconds} s` : 'stack up; Ctrl-C stops it');
      if (options.forSeconds) await sleep(options.forSeconds * 1000, io.signal);
      else await new Promise<void>((resolve) => (io.signal.aborted ? resolve() : io.signal.addEventListener('abort', () => resolve(), { once: true })));
      interrupted = io.signal.aborted;
    }

    // Stop: the traffic, one last look, then the services (before the servers they use).
    event(interrupted ? 'interrupted: stopping' : 'stopping');
    traffic.abort();
    viewStop.abort();
    await Promise.all([tickLoop, viewLoop]);
    view.close();
    await observe();
    const statusAtEnd = new Map(running.map((r) => [r.service.name, r.supervisor.status]));
    await Promise.all(running.map((r) => r.supervisor.stop()));
    const verdict = summarize(
      running.map((r) => ({ name: r.service.name, statusAtEnd: statusAtEnd.get(r.service.name)!, crashes: r.supervisor.crashes, activity: r.supervisor.activity(), seededThisRun: r.seededThisRun, seedNote: r.seedNote, seedFailed: r.seedFailed, archives: r.settings.archive !== undefined })),
      elapsed(),
      options.forSeconds !== undefined,
    );
    for (const line of verdict.lines) writeLine(io.stdout, line);
    if (options.forSeconds !== undefined) {
      if (interrupted) {
        writeLine(io.stdout, `result: interrupted before --for ${options.forSeconds} elapsed`);
        verdictCode = 1;
      } else {
        verdictCode = verdict.ok ? 0 : 1;
      }
    }
    return verdictCode;
  } finally {
    await Promise.all(running.map((r) => r.supervisor.stop()));
    for (const { name, stop } of stops.reverse()) {
      try {
        await stop();
      } catch (error) {
        writeLine(io.stderr, `devstack: stopping ${name} failed: ${(error as Error).message}`);
      }
    }
  }
}

/** The ports of a service's replicas: its own, then one set of eight further per replica. */
export function replicaPorts(port: number, replicas: number): number[] {
  return Array.from({ length: replicas }, (_, i) => port + i * SERVICE_NAMES.length);
}
