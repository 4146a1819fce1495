// The status page's HTTP server: read-only, on 127.0.0.1 only, plain `node:http` (three
// routes). `GET /` the page, `GET /fragment` what its script fetches again, `GET /status.json`
// the data. Anything else is refused; so is a Host header that is not this machine's (a page
// elsewhere that rebinds its name to 127.0.0.1 cannot read the status).
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UsageError } from '../command.ts';
import { statusJson } from './status-json.ts';
import { renderLive, renderPage, type StatusView } from './status-page.ts';

/** The status page's port is taken: names it (exit code 2, like a service port in use). */
export class StatusPortInUseError extends UsageError {
  readonly code = 'devstack_status_port_in_use';
  constructor(readonly port: number) {
    super(`port ${port} for the status page is in use (another devstack?); pass --status-port N (0: any free port, off: no page) or --port-base N`);
  }
}

export interface StatusServer {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface StatusServerOptions {
  /** 0: any free port. */
  readonly port: number;
  readonly view: () => StatusView;
  /** How often the page fetches its fragment again; default 2 s. */
  readonly refreshMs?: number;
}

function send(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', ...extra });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  let port = options.port;
  const hosts = () => new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain; charset=utf-8', 'read-only: GET only\n', { allow: 'GET, HEAD' });
    if (!hosts().has(req.headers.host ?? '')) return send(res, 421, 'text/plain; charset=utf-8', `this page answers as 127.0.0.1:${port} only\n`);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    try {
      if (path === '/') {
        const nonce = randomBytes(16).toString('base64');
        const csp = `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
        return send(res, 200, 'text/html; charset=utf-8', renderPage(options.view(), { nonce, refreshMs: options.refreshMs ?? 2000 }), { 'content-security-policy': csp });
      }
      if (path === '/fragment') return send(res, 200, 'text/html; charset=utf-8', renderLive(options.view()));
      if (path === '/status.json') return send(res, 200, 'application/json', `${JSON.stringify(statusJson(options.view()))}\n`);
      return send(res, 404, 'text/plain; charset=utf-8', 'not found: / (the page), /status.json (its data)\n');
    } catch (error) {
      return send(res, 500, 'text/plain; charset=utf-8', `status page: ${(error as Error).message}\n`);
    }
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? new StatusPortInUseError(options.port) : error));
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // A browser's keep-alive connection would hold close() for seconds.
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
