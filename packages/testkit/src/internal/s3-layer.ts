// A thin HTTP layer in front of s3rver. s3rver (like Garage) ignores `If-None-Match`; with
// `conditional` on, this layer answers 412 to a create of an existing key the way AWS, MinIO
// and R2 do. It also injects faults (409, 500, delays, hangs) for the store's failure tests,
// controlled over `/__testkit/*` so it works the same in this process or a child process.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface S3Fault {
  /** HTTP method to match (`PUT`, `GET`, `HEAD`, …); any when absent. */
  readonly method?: string;
  /** Object key to match: exact, or a regular expression source when it starts with `re:`. */
  readonly key?: string;
  /** Respond with this status and S3 error code instead of forwarding. */
  readonly status?: number;
  readonly code?: string;
  /** Wait this long first (then respond with `status`, or forward). */
  readonly delayMs?: number;
  /** Never respond (the client's own timeouts must fire). */
  readonly hang?: boolean;
  /**
   * Before forwarding, write these bytes to the request's key, as another writer racing the
   * client would (a foreign occupant appearing between a caller's decision and its write).
   */
  readonly occupy?: string;
  /** How many matching requests this fault applies to; 1 by default, -1 for every one. */
  readonly times?: number;
}

export interface RequestRecord {
  readonly method: string;
  readonly bucket: string | undefined;
  readonly key: string | undefined;
  readonly ifNoneMatch: string | undefined;
  readonly status: number;
}

export interface LayerOptions {
  readonly upstreamPort: number;
  /** Where the layer listens; a free port when absent. */
  readonly port?: number;
  readonly conditional: boolean;
  readonly exists: (bucket: string, key: string) => Promise<boolean>;
}

export interface Layer {
  readonly server: Server;
  close(): Promise<void>;
}

const ERROR_MESSAGES: Record<string, string> = {
  PreconditionFailed: 'At least one of the pre-conditions you specified did not hold',
  ConditionalRequestConflict: 'A conflicting operation occurred. If using PutObject you can retry the request.',
  InternalError: 'We encountered an internal error. Please try again.',
  SlowDown: 'Please reduce your request rate.',
};

export function startLayer(options: LayerOptions): Promise<Layer> {
  const faults: Array<S3Fault & { remaining: number }> = [];
  const log: RequestRecord[] = [];
  const keyLocks = new Map<string, Promise<void>>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'InternalError', String(error));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://layer');
    if (url.pathname.startsWith('/__testkit/')) return control(url.pathname, req, res);

    const [, bucketPart, ...keyParts] = url.pathname.split('/');
    const bucket = bucketPart ? decodeURIComponent(bucketPart) : undefined;
    const key = keyParts.length > 0 && keyParts.join('/') !== '' ? decodeURIComponent(keyParts.join('/')) : undefined;
    const method = req.method ?? 'GET';
    const ifNoneMatch = header(req, 'if-none-match');
    const record = (status: number) => log.push({ method, bucket, key, ifNoneMatch, status });

    const fault = takeFault(method, key);
    if (fault) {
      if (fault.hang) {
        req.resume();
        record(0);
        return; // never answered; the socket is destroyed when the layer closes
      }
      if (fault.delayMs) await sleep(fault.delayMs);
      if (fault.occupy !== undefined && bucket && key) await plant(bucket, key, Buffer.from(fault.occupy));
      if (fault.status) {
        req.resume();
        record(fault.status);
        return sendError(res, fault.status, fault.code ?? (fault.status === 409 ? 'ConditionalRequestConflict' : 'InternalError'));
      }
    }

    const isCreate = options.conditional && method === 'PUT' && ifNoneMatch === '*' && bucket && key && !url.searchParams.has('partNumber');
    if (!isCreate) return forward(req, res, record);

    // Serialize creates per key so the existence check and the write are one step, as a
    // conditional put is on a real backend.
    const lockKey = `${bucket}/${key}`;
    const previous = keyLocks.get(lockKey) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((r) => (release = r));
    const chained = previous.then(() => current);
    keyLocks.set(lockKey, chained);
    await previous;
    try {
      if (await options.exists(bucket, key)) {
        req.resume();
        record(412);
        return sendError(res, 412, 'PreconditionFailed');
      }
      await forward(req, res, record);
    } finally {
      release();
      if (keyLocks.get(lockKey) === chained) keyLocks.delete(lockKey);
    }
  }

  function takeFault(method: string, key: string | undefined): S3Fault | undefined {
    const i = faults.findIndex(
      (f) =>
        (f.method === undefined || f.method === method) &&
        (f.key === undefined || (key !== undefined && (f.key.startsWith('re:') ? new RegExp(f.key.slice(3)).test(key) : f.key === key))),
    );
    if (i < 0) return undefined;
    const fault = faults[i]!;
    if (fault.remaining > 0 && --fault.remaining === 0) faults.splice(i, 1);
    return fault;
  }

  /** A plain PUT straight to the backend, bypassing the layer (the foreign writer). */
  function plant(bucket: string, key: string, body: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      const path = `/${encodeURIComponent(bucket)}/${key.split('/').map(encodeURIComponent).join('/')}`;
      const upstream = request({ host: '127.0.0.1', port: options.upstreamPort, method: 'PUT', path, headers: { 'content-length': body.byteLength, 'content-type': 'application/octet-stream' } }, (up) => {
        up.resume();
        up.once('end', () => ((up.statusCode ?? 500) < 300 ? resolve() : reject(new Error(`planting ${key}: HTTP ${up.statusCode}`))));
      });
      upstream.once('error', reject);
      upstream.end(body);
    });
  }

  function forward(req: IncomingMessage, res: ServerResponse, record: (status: number) => void): Promise<void> {
    return new Promise((resolve) => {
      const upstream = request(
        { host: '127.0.0.1', port: options.upstreamPort, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          record(up.statusCode ?? 0);
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
          up.once('end', resolve);
          up.once('error', () => resolve());
        },
      );
      upstream.once('error', (error) => {
        if (!res.headersSent) sendError(res, 502, 'InternalError', error.message);
        resolve();
      });
      req.pipe(upstream);
    });
  }

  async function control(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (path === '/__testkit/faults' && req.method === 'POST') {
      const fault = JSON.parse(await readBody(req)) as S3Fault;
      faults.push({ ...fault, remaining: fault.times ?? 1 });
      res.writeHead(204).end();
    } else if (path === '/__testkit/faults' && req.method === 'DELETE') {
      faults.length = 0;
      res.writeHead(204).end();
    } else if (path === '/__testkit/requests' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(log));
    } else if (path === '/__testkit/requests' && req.method === 'DELETE') {
      log.length = 0;
      res.writeHead(204).end();
    } else {
      res.writeHead(404).end();
    }
  }

  return new Promise((resolve) => {
    server.listen(options.port ?? 0, '127.0.0.1', () =>
      resolve({
        server,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      }),
    );
  });
}

function sendError(res: ServerResponse, status: number, code: string, detail?: string): void {
  const message = detail ?? ERROR_MESSAGES[code] ?? code;
  res
    .writeHead(status, { 'content-type': 'application/xml' })
    .end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const escapeXml = (s: string) => s.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);
