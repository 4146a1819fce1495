import { SERVICE_NAMES, SERVICE_PROFILES } from '@craig/settings';
import { writeLine, type Command } from '../command.ts';
import { DEFAULT_DB_PREFIX, DEFAULT_HISTORY_ROWS, DEFAULT_STATE_DIR, parseDevstackOptions } from '../devstack/options.ts';
import { scrapeConfig } from '../devstack/scrape-config.ts';
import { runDevstack } from '../devstack/stack.ts';

export const devstackCommand: Command = {
  name: 'devstack',
  summary: 'run the whole platform on this machine: PostgreSQL, S3, the bus, every built service, demo traffic, a live view',
  usage: `pnpm xtask devstack [--fresh] [--port-base N] [--rabbitmq] [--for SECONDS] [--quiet]
                      [--only a,b] [--state-dir DIR] [--history-rows N] [--db-prefix P] [--seed N]
                      [--replicas N] [--status-port N|0|off]
       pnpm xtask devstack --print-scrape-config [--port-base N] [--only a,b] [--replicas N]
(on a machine with only Node and npm: npm run devstack -- <options>)

Starts an embedded PostgreSQL 15 cluster (kept in <state-dir>/pg), the S3 test server (objects in
<state-dir>/s3), the PostgreSQL bus, and every service of the eight that exists as
services/<name>/ (the others are listed as "not built yet"), each a supervised child process
logging to <state-dir>/logs/<name>.log. Each fresh service database gets aged history, then demo
traffic drives its HTTP API about once a second; the live view (a table redrawn in place on a
terminal, short lines on a pipe) shows every sweep, archive and cleanup as it happens, and a
read-only status page serves the same table, row counts over time and each service's
invariants verdict. Sweeps run every 20 s here (EVENT_PRUNE_EVERY_TICKS=20).

  --fresh            wipe <state-dir> first (cluster, objects, logs, state.json)
  --port-base N      HTTP ports N.. in SERVICE_NAMES order (cases N, …, inventory N+7);
                     default each service's own port (7101..7108); N from 1025
  --rabbitmq         RabbitMQ transport instead of the bus: AMQP_URL / CRAIG__AMQP_URL, else
                     amqp://guest:guest@127.0.0.1:5672
  --for SECONDS      once the stack is up, run that long, stop, print a summary; exit 0 only if
                     every service stayed up and each freshly seeded service pruned aged rows
  --quiet            no live view (the banner, events and the summary still print)
  --only a,b         run only these services
  --state-dir DIR    default ${DEFAULT_STATE_DIR} (gitignored)
  --history-rows N   aged rows seeded per fresh database (default ${DEFAULT_HISTORY_ROWS.toLocaleString('en-US')}; 0 seeds nothing)
  --db-prefix P      databases are <P><service> and <P>bus (default ${DEFAULT_DB_PREFIX})
  --seed N           seed of the demo traffic's random choices (default 1)
  --replicas N       run N processes of every service (1–4), replica k on its port + 8(k-1),
                     all on the service's one database: the advisory locks keep their sweeps,
                     archive cycles and cleanup steps apart; demo traffic goes to each in turn
  --print-scrape-config
                     print a Prometheus config scraping the services on the ports this
                     devstack uses (with --port-base, --only, --replicas and any HTTP_PORT setting), loading
                     ops/prometheus/alerts.yml; starts nothing (docs/operations.md)
  --status-port N    the status page's port (default: the one below the services' first,
                     7100 or N-1 with --port-base N); 0 any free port, off no page

Real servers instead: CRAIG__DATABASE_URL (else DATABASE_URL) names a PostgreSQL server: the
devstack connects to it and creates <P><service> and <P>bus there instead of starting a cluster.
CRAIG_<SERVICE>__DATABASE_URL and CRAIG__BUS_DATABASE_URL name one database each, used as they
are (created when missing). CRAIG__OBJECT_STORE_ENDPOINT (with the other OBJECT_STORE_* keys)
names an object store, and no S3 server is started. Any other CRAIG__<KEY> or
CRAIG_<SERVICE>__<KEY> setting wins over the devstack's value. See docs/devstack.md.`,
  async run(ctx) {
    const options = parseDevstackOptions(ctx.argv, ctx.root);
    if (options.printScrapeConfig) {
      const names = SERVICE_NAMES.filter((n) => !options.only || options.only.includes(n));
      ctx.stdout.write(scrapeConfig({ profiles: names.map((n) => SERVICE_PROFILES[n]), portBase: options.portBase, replicas: options.replicas, env: ctx.env, root: ctx.root }));
      return 0;
    }
    const code = await runDevstack(options, ctx);
    if (code !== 0) writeLine(ctx.stderr, `devstack: exit ${code} (see the summary above and ${options.stateDir}/logs)`);
    return code;
  },
};
