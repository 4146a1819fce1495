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
  // While trickling: bytes that may still go through at once (at most one tick's worth).
  let credit = 0;
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
    upstream.on('data', (data: Buffer) => {
      if (!holding) return void client.write(data);
      held.push({ client, data });
      if (credit > 0) credit -= release(credit);
    });
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
    /**
     * While holding, let `bytes` through every `everyMs`, like a link that slow. A tick's bytes
     * not yet there go through as soon as they arrive (up to one tick's worth is kept), so a
     * server slower than the tick does not lose its turn to the next one. Returns a stop function.
     */
    trickle(bytes: number, everyMs: number): () => void {
      const timer = setInterval(() => {
        credit = bytes;
        credit -= release(credit);
      }, everyMs);
      return () => {
        clearInterval(timer);
        credit = 0;
      };
    },
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
