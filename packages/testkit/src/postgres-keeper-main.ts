// The keeper of an embedded PostgreSQL cluster in its own process (`startEmbeddedPostgres({
// process: 'child' })`): it starts the cluster, reports the port on its IPC channel, obeys
// crash/restart/stop requests, and stops the cluster when its parent goes away. A postmaster
// outlives a parent killed with SIGKILL; the keeper does not, because the IPC channel closes
// with the parent, so the devstack's cluster cannot be orphaned by a `kill -9` of the devstack.
import { appendFileSync } from 'node:fs';
import { startCluster, type Cluster } from './internal/embedded-cluster.ts';

interface KeeperArgs {
  readonly dataDir: string;
  readonly port: number;
  readonly password: string;
  /** Where the server's output is appended; none when absent. */
  readonly logFile?: string;
}

type Request = { readonly id: number; readonly op: 'crash' | 'restart' | 'stop' };

const args = JSON.parse(process.argv[2] ?? '{}') as KeeperArgs;
const send = (message: unknown) => process.send?.(message);
let cluster: Cluster | undefined;
let stopping: Promise<void> | undefined;

function stopAndExit(code: number): Promise<void> {
  stopping ??= (async () => {
    try {
      await cluster?.stop();
    } finally {
      process.exit(code);
    }
  })();
  return stopping;
}

process.once('disconnect', () => void stopAndExit(0));
process.once('SIGTERM', () => void stopAndExit(0));
process.once('SIGINT', () => void stopAndExit(0));

process.on('message', (request: Request) => {
  void (async () => {
    try {
      if (request.op === 'crash') await cluster!.crash();
      else if (request.op === 'restart') await cluster!.restart();
      else if (request.op === 'stop') {
        await cluster?.stop();
        cluster = undefined;
      }
      send({ id: request.id, ok: true, pid: cluster?.pid });
    } catch (error) {
      send({ id: request.id, ok: false, error: (error as Error).message });
    }
  })();
});

try {
  cluster = await startCluster({
    dataDir: args.dataDir,
    port: args.port,
    password: args.password,
    ...(args.logFile ? { onLog: (text: string) => appendFileSync(args.logFile!, text) } : {}),
  });
  send({ ready: true, port: cluster.port, pid: cluster.pid });
} catch (error) {
  send({ ready: false, error: (error as Error).message });
  process.exit(1);
}
