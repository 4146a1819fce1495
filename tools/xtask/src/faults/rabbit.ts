// RabbitMQ seen from outside, through `rabbitmqctl` on this machine: a vhost per scenario (so
// closing "all" connections closes only the scenario's own), connections closed under the
// services' feet, and the broker application stopped and started.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Rabbit {
  /** The broker URL for a vhost (`amqp://guest:guest@127.0.0.1:5672/<vhost>`). */
  url(vhost: string): string;
  /** Create the vhost and give the URL's user every permission on it. */
  addVhost(vhost: string): Promise<void>;
  deleteVhost(vhost: string): Promise<void>;
  /** `rabbitmqctl close_all_connections --vhost <vhost>`: returns how many were open. */
  closeAllConnections(vhost: string, reason: string): Promise<number>;
  /** Connections open on the vhost, by their client-given names. */
  connections(vhost: string): Promise<string[]>;
  /** `rabbitmqctl stop_app`, then `start_app` after `downMs`: the broker is away for everyone on this machine. */
  restartBroker(downMs: number): Promise<void>;
}

/**
 * The local broker through rabbitmqctl, or undefined (with the reason) when the machine has no
 * rabbitmqctl that reaches a running node. `baseUrl` names the broker the services connect to.
 */
export async function localRabbit(baseUrl: string): Promise<{ rabbit: Rabbit } | { missing: string }> {
  const ctl = async (...args: string[]) => (await run('rabbitmqctl', ['--quiet', ...args], { timeout: 60_000 })).stdout;
  try {
    await ctl('status');
  } catch (error) {
    return { missing: `rabbitmqctl cannot reach a broker here: ${(error as Error).message.split('\n')[0]}` };
  }
  const base = new URL(baseUrl);
  const user = decodeURIComponent(base.username || 'guest');
  const rabbit: Rabbit = {
    url(vhost) {
      const u = new URL(baseUrl);
      u.pathname = `/${encodeURIComponent(vhost)}`;
      return u.toString();
    },
    async addVhost(vhost) {
      await ctl('add_vhost', vhost);
      await ctl('set_permissions', '--vhost', vhost, user, '.*', '.*', '.*');
    },
    async deleteVhost(vhost) {
      await ctl('delete_vhost', vhost).catch(() => undefined);
    },
    async closeAllConnections(vhost, reason) {
      const open = (await rabbit.connections(vhost)).length;
      await ctl('close_all_connections', '--vhost', vhost, reason);
      return open;
    },
    async connections(vhost) {
      const out = await ctl('list_connections', '--vhost', vhost, 'client_properties', '--no-table-headers');
      return out
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => /connection_name","([^"]*)"/.exec(l)?.[1] ?? l.trim());
    },
    async restartBroker(downMs) {
      await ctl('stop_app');
      try {
        await new Promise((r) => setTimeout(r, downMs));
      } finally {
        await ctl('start_app');
        await ctl('await_startup');
      }
    },
  };
  return { rabbit };
}
