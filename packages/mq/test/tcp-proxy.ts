import { createServer, connect, type Socket } from 'node:net';

/**
 * A TCP relay in front of a real server, to take it away and give it back: `cut()` drops every
 * connection and refuses new ones (a broker outage as the client sees it), `restore()` lets
 * them through again. The server behind it is never touched.
 */
export async function tcpProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    /** `url` with its host and port pointed at the proxy. */
    via(url: string): string {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    get connections(): number {
      return sockets.size / 2;
    },
    cut(): void {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore(): void {
      down = false;
    },
    async close(): Promise<void> {
      down = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
