import { createServer, connect, type Socket } from 'node:net';

/**
 * A TCP relay in front of a real server, to take it away and give it back: `cut()` drops every
 * connection and refuses new ones (a broker outage as the client sees it), `restore()` lets
 * them through again. The server behind it is never touched.
 */
export async function tcpProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<Socket>();
  let down = false;
  // Server-to-client bytes kept back while holding, in arrival order (a server that stalls).
  let holding = false;
  const held: Array<{ client: Socket; data: Buffer }> = [];
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
    upstream.on('data', (data: Buffer) => (holding ? held.push({ client, data }) : client.write(data)));
  });
  const release = (bytes: number): number => {
    let sent = 0;
    while (held.length > 0 && sent < bytes) {
      const first = held[0]!;
      const n = Math.min(first.data.length, bytes - sent);
      first.client.write(first.data.subarray(0, n));
      sent += n;
      if (n === first.data.length) held.shift();
      else first.data = first.data.subarray(n);
    }
    return sent;
  };
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
    /** Keep what the server sends back from now on (connections stay up; the client hears nothing). */
    hold(): void {
      holding = true;
    },
    /** Let up to `bytes` of what was held through, in order, and keep holding; returns how many went. */
    release,
    /** Let everything held through and stop holding. */
    flow(): void {
      release(Number.POSITIVE_INFINITY);
      holding = false;
    },
    /** Bytes held back so far and not yet released. */
    get heldBytes(): number {
      return held.reduce((n, h) => n + h.data.length, 0);
    },
    async close(): Promise<void> {
      down = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
