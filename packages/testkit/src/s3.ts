import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { RequestRecord, S3Fault } from './internal/s3-layer.ts';
import { startS3Backend } from './internal/s3-backend.ts';

export type { RequestRecord, S3Fault } from './internal/s3-layer.ts';

export interface S3Options {
  /** Answer 412 to `If-None-Match: *` on an existing key (AWS/MinIO/R2 behaviour). Off: Garage behaviour. */
  readonly conditional?: boolean;
  readonly bucket?: string;
  /** `child` runs the server in another process (for benchmarks); `inline` (default) in this one. */
  readonly process?: 'inline' | 'child';
  /** Where objects are stored; a temporary directory (removed at stop) by default. */
  readonly directory?: string;
  /** With `process: 'child'`: its own process group, so a terminal's Ctrl-C reaches only the parent (the devstack stops it last). */
  readonly detached?: boolean;
  /** Where it listens; a free port when absent. A fault test restarts a killed server at the same endpoint. */
  readonly port?: number;
}

export interface S3TestServer {
  readonly endpoint: string;
  readonly region: string;
  readonly bucket: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly forcePathStyle: true;
  /** Where s3rver keeps the objects on disk. */
  readonly directory: string;
  /** Add a fault; it applies to the next `times` (default 1) matching requests. */
  inject(fault: S3Fault): Promise<void>;
  clearFaults(): Promise<void>;
  /** The server process's pid (`process: 'child'`): a fault test kills it. */
  readonly pid: number | undefined;
  /** Every request the layer saw, with the status it answered. */
  requests(): Promise<RequestRecord[]>;
  clearRequests(): Promise<void>;
  stop(): Promise<void>;
}

/** An S3-protocol server (s3rver) with a bucket, and the conditional/fault layer in front. */
export async function s3(options: S3Options = {}): Promise<S3TestServer> {
  const bucket = options.bucket ?? 'craig-archive';
  const conditional = options.conditional ?? false;
  const backend =
    options.process === 'child'
      ? await startChild(bucket, conditional, options.directory, options.detached ?? false, options.port)
      : { ...(await startS3Backend({ bucket, conditional, ...(options.directory ? { directory: options.directory } : {}), ...(options.port ? { port: options.port } : {}) })), pid: undefined };
  const control = async (path: string, method: string, body?: unknown) => {
    const res = await fetch(`${backend.endpoint}/__testkit/${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    if (!res.ok) throw new Error(`s3 test server control ${method} ${path}: ${res.status}`);
    return res;
  };
  return {
    endpoint: backend.endpoint,
    region: 'us-east-1',
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    forcePathStyle: true,
    directory: backend.directory,
    pid: backend.pid,
    inject: async (fault) => void (await control('faults', 'POST', fault)),
    clearFaults: async () => void (await control('faults', 'DELETE')),
    requests: async () => (await (await control('requests', 'GET')).json()) as RequestRecord[],
    clearRequests: async () => void (await control('requests', 'DELETE')),
    stop: () => backend.stop(),
  };
}

async function startChild(bucket: string, conditional: boolean, directory: string | undefined, detached: boolean, port: number | undefined) {
  const entry = fileURLToPath(new URL('./s3-server-main.ts', import.meta.url));
  // s3rver's list continuation tokens use DES, which Node 20's OpenSSL 3 keeps in the legacy provider.
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '--import', 'tsx', entry, bucket, conditional ? 'conditional' : 'plain', directory ?? '', String(port ?? 0)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached,
  });
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`s3 test server exited with ${code}`)));
  });
  const address = JSON.parse(first) as { endpoint: string; directory: string };
  return {
    ...address,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
