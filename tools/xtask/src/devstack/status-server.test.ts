import { request } from 'node:http';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CountHistory } from './count-history.ts';
import { StatusPortInUseError, startStatusServer, type StatusServer } from './status-server.ts';
import { fakeFleet } from './view-fixtures.ts';

let server: StatusServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const get = (path: string, init: RequestInit = {}) => fetch(new URL(path, server!.url), init);

/** GET /status.json from 127.0.0.1 with this Host header (fetch would not let us set it). */
function statusWithHost(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server!.port, path: '/status.json', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('status server', () => {
  it('serves the page with a nonce CSP, the fragment, and the data as JSON', async () => {
    server = await startStatusServer({ port: 0, view: () => fakeFleet() });
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    const nonce = /<script nonce="([^"]+)">/.exec(html)?.[1];
    expect(nonce).toBeDefined();
    expect(page.headers.get('content-security-policy')).toContain(`script-src 'nonce-${nonce}'`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    // Escaped: a log line's markup is never markup.
    expect(html).toContain('answered 503 &lt;service unavailable&gt;');
    expect(html).not.toContain('<service unavailable>');
    expect(html).not.toMatch(/(src|href)="https?:\/\/(?!127\.0\.0\.1)/);

    const fragment = await (await get('/fragment')).text();
    expect(fragment.startsWith('<p class="summary"')).toBe(true);
    expect(fragment).not.toContain('<html');

    const json = (await (await get('/status.json')).json()) as { elapsedSeconds: number; services: Array<Record<string, unknown>> };
    expect(json.services.map((s) => s.name)).toEqual(['cases', 'placements', 'safety', 'security', 'rules', 'exchange', 'financial', 'inventory']);
    const inventory = json.services.find((s) => s.name === 'inventory')!;
    expect(inventory).toMatchObject({ state: 'up', up: true, restarts: 0, processes: [{ status: 'up', restarts: 0, port: 7108 }], counts: { items: 1865 } });
    expect(inventory.activity).toMatchObject({ parked: 3, pruned: { event_outbox: 12100, event_inbox: 6000 }, cleanupJobs: { 'prune-library completed': 2 }, cleanupDeleted: 780 });
    expect((inventory.history as Record<string, unknown[]>).items).toHaveLength(31);
    expect(inventory.invariants).toMatchObject({ results: expect.arrayContaining([{ name: 'event_outbox_parked', ok: false, rows: 3, detail: expect.any(String) }]) });
  });

  it('is read-only, answers only as this machine, and 404s the rest', async () => {
    server = await startStatusServer({ port: 0, view: () => fakeFleet() });
    const post = await get('/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await get('/nope')).status).toBe(404);
    const head = await get('/status.json', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    // A name rebound to 127.0.0.1 by some page elsewhere is not this page's name; localhost is.
    expect(await statusWithHost(`evil.example:${server.port}`)).toBe(421);
    expect(await statusWithHost(`localhost:${server.port}`)).toBe(200);
  });

  it('refuses a port that is taken, naming it and the options', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const port = (taken.address() as { port: number }).port;
    try {
      const error = await startStatusServer({ port, view: () => fakeFleet() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StatusPortInUseError);
      expect(error).toMatchObject({ code: 'devstack_status_port_in_use', port });
      expect((error as Error).message).toContain(`port ${port} for the status page is in use`);
      expect((error as Error).message).toContain('--status-port');
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});

describe('count history', () => {
  it('keeps every point up to its bound, then every other one, the newest exact', () => {
    const h = new CountHistory(10);
    for (let t = 0; t < 10; t++) h.record('cases', t, new Map([['cases', t * 10]]));
    expect(h.of('cases').get('cases')).toHaveLength(10);
    h.record('cases', 10, new Map([['cases', undefined]]));
    const points = h.of('cases').get('cases')!;
    expect(points.map((p) => p[0])).toEqual([0, 2, 4, 6, 8, 10]);
    expect(points.at(-1)).toEqual([10, undefined]);
    expect(h.of('rules').size).toBe(0);
  });
});
