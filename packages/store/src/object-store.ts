import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { addAbortSignal, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import pino, { type Logger } from 'pino';
import { jitteredBackoff, resolveBounds, type StoreBounds } from './bounds.ts';
import { checkBackend, type ObjectStoreBackend, type ObjectStoreConfig } from './config.ts';
import { hexToBase64, isSha256Hex, sha256Hex } from './digest.ts';
import { DigestMismatchError, ForeignObjectError, ObjectNotFoundError, StoreConflictError } from './errors.ts';
import { isStatus, toStoreError, type OperationSignals } from './internal/classify.ts';
import { createSdkClient } from './internal/sdk-client.ts';

export interface ObjectStoreOptions {
  /** Receives the convergence warnings; silent by default. */
  readonly logger?: Logger;
  /** The caller's shutdown signal: aborts every operation in flight. */
  readonly signal?: AbortSignal;
  /** Override bounds (tests shorten them); defaults are {@link STORE_BOUNDS}. */
  readonly bounds?: Partial<StoreBounds>;
  /** Delay before retry number n (1-based), ms; default {@link jitteredBackoff}. Tests inject a fast one. */
  readonly backoff?: (retry: number) => number;
}

/** Per-call options. */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

export interface PutCreateResult {
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
  /** `exists`: the backend refused the create (412): something is already at the key. */
  readonly outcome: 'created' | 'exists';
  /** 409 conflicts retried before the answer. */
  readonly conflicts: number;
}

/**
 * `created`: written (and, on garage, read back and verified). `converged`: an identical
 * object was already there (found by the precheck). `converged_after_412`: the conditional put
 * was refused and the occupant turned out identical.
 */
export type BlobCreateOutcome = 'created' | 'converged' | 'converged_after_412';

export interface BlobCreateResult {
  readonly key: string;
  /** Lower-case hex SHA-256 of the bytes. */
  readonly sha256: string;
  readonly bytes: number;
  readonly outcome: BlobCreateOutcome;
}

export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
}

/** An S3-compatible bucket with pinned bounds and digest-verified writes. It has no delete. */
export interface ObjectStore {
  readonly backend: ObjectStoreBackend;
  readonly bucket: string;
  readonly bounds: StoreBounds;
  /** Conditional put (`If-None-Match: *`) with a SHA-256 checksum; 409 is retried, 412 is `exists`. */
  putCreate(key: string, bytes: Uint8Array, options?: CallOptions): Promise<PutCreateResult>;
  /** The digest-verified create: see the package README for every outcome. */
  storeBlobCreate(key: string, bytes: Uint8Array, options?: CallOptions): Promise<BlobCreateResult>;
  /** The object's bytes if their SHA-256 is `sha256`; else `DigestMismatchError`. */
  getVerified(key: string, sha256: string, options?: CallOptions): Promise<Buffer>;
  /** The object's bytes, or `ObjectNotFoundError`. */
  get(key: string, options?: CallOptions): Promise<Buffer>;
  /** Size of the object, or `undefined` when absent. */
  head(key: string, options?: CallOptions): Promise<ObjectInfo | undefined>;
  /** Every object under the prefix, in key order (each page within the budget). */
  list(prefix: string, options?: CallOptions): AsyncIterable<ObjectInfo>;
  /** Close the client's sockets. */
  close(): void;
}

/**
 * Build the store from its settings. A backend other than `s3` or `garage` is refused here, at
 * boot, with `UnsupportedBackendError`.
 */
export function createObjectStore(config: ObjectStoreConfig, options: ObjectStoreOptions = {}): ObjectStore {
  const backend = checkBackend(config.backend);
  const bounds = resolveBounds(options.bounds);
  const backoff = options.backoff ?? ((retry: number) => jitteredBackoff(retry));
  const client = createSdkClient({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: config.forcePathStyle ?? false,
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
    bounds,
    backoff,
  });
  return new S3ObjectStore(client, backend, config.bucket, bounds, backoff, options.logger ?? pino({ level: 'silent' }), options.signal);
}

class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly client: S3Client,
    readonly backend: ObjectStoreBackend,
    readonly bucket: string,
    readonly bounds: StoreBounds,
    private readonly backoff: (retry: number) => number,
    private readonly logger: Logger,
    private readonly shutdown: AbortSignal | undefined,
  ) {}

  /** Run one operation under its total budget, the shutdown signal and the caller's signal. */
  private async operation<T>(name: string, key: string | undefined, call: CallOptions | undefined, fn: (signals: OperationSignals) => Promise<T>): Promise<T> {
    const budget = AbortSignal.timeout(this.bounds.operationBudgetMs);
    const signal = AbortSignal.any([budget, ...(this.shutdown ? [this.shutdown] : []), ...(call?.signal ? [call.signal] : [])]);
    const signals: OperationSignals = { signal, budget, budgetMs: this.bounds.operationBudgetMs };
    try {
      signal.throwIfAborted();
      return await fn(signals);
    } catch (error) {
      throw toStoreError(error, name, key, signals);
    }
  }

  putCreate(key: string, bytes: Uint8Array, options?: CallOptions): Promise<PutCreateResult> {
    return this.operation('putCreate', key, options, (s) => this.putCreateIn(key, bytes, sha256Hex(bytes), s));
  }

  private async putCreateIn(key: string, bytes: Uint8Array, sha256: string, s: OperationSignals): Promise<PutCreateResult> {
    const body = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let conflicts = 0;
    for (;;) {
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: body,
            ContentLength: body.byteLength,
            IfNoneMatch: '*',
            ChecksumSHA256: hexToBase64(sha256),
            Metadata: { sha256 },
          }),
          { abortSignal: s.signal },
        );
        return { key, sha256, bytes: body.byteLength, outcome: 'created', conflicts };
      } catch (error) {
        // The SDK retries neither: 412 is an answer, 409 (a concurrent conflicting write) is
        // retried here, within the same budget.
        if (isStatus(error, 412)) return { key, sha256, bytes: body.byteLength, outcome: 'exists', conflicts };
        if (!isStatus(error, 409)) throw error;
        conflicts++;
        if (conflicts > this.bounds.maxRetries) throw new StoreConflictError(key, conflicts, error);
        this.logger.warn({ key, conflicts }, 'object store: 409 conflict on create, retrying');
        await sleep(this.backoff(conflicts), undefined, { signal: s.signal });
      }
    }
  }

  storeBlobCreate(key: string, bytes: Uint8Array, options?: CallOptions): Promise<BlobCreateResult> {
    return this.operation('storeBlobCreate', key, options, async (s) => {
      const sha256 = sha256Hex(bytes);
      const result = (outcome: BlobCreateOutcome): BlobCreateResult => ({ key, sha256, bytes: bytes.byteLength, outcome });

      // Precheck: a foreign occupant is refused BEFORE any write, so nothing of ours can have
      // replaced it and the caller deletes nothing against it.
      const occupant = await this.digestAt(key, s);
      if (occupant !== undefined) {
        if (occupant !== sha256) throw new ForeignObjectError(key, sha256, occupant, 'precheck');
        // Anomalous: archive keys are minted under fresh ids. Identical bytes are our own
        // earlier write (a retried batch), so converging is safe; say so loudly.
        this.logger.warn({ key, sha256 }, 'object store: identical object already at key; converging');
        return result('converged');
      }

      const put = await this.putCreateIn(key, bytes, sha256, s);
      if (put.outcome === 'exists') {
        // Someone created the key between the precheck and the put: decide by content.
        const found = await this.digestAt(key, s);
        if (found === undefined) throw new ObjectNotFoundError(key);
        if (found !== sha256) throw new ForeignObjectError(key, sha256, found, 'precondition');
        this.logger.warn({ key, sha256 }, 'object store: create refused (412) by an identical object; converging');
        return result('converged_after_412');
      }

      if (this.backend === 'garage') {
        // Garage ignores If-None-Match: the put may have replaced an occupant, or been
        // replaced. Only what is there now counts.
        const found = await this.digestAt(key, s);
        if (found === undefined) throw new ObjectNotFoundError(key);
        if (found !== sha256) throw new ForeignObjectError(key, sha256, found, 'read_back');
      }
      return result('created');
    });
  }

  getVerified(key: string, sha256: string, options?: CallOptions): Promise<Buffer> {
    if (!isSha256Hex(sha256)) throw new TypeError(`sha256 must be 64 lower-case hex digits: ${JSON.stringify(sha256)}`);
    return this.operation('getVerified', key, options, async (s) => {
      const bytes = await this.getIn(key, s);
      const found = sha256Hex(bytes);
      if (found !== sha256) throw new DigestMismatchError(key, sha256, found);
      return bytes;
    });
  }

  get(key: string, options?: CallOptions): Promise<Buffer> {
    return this.operation('get', key, options, (s) => this.getIn(key, s));
  }

  head(key: string, options?: CallOptions): Promise<ObjectInfo | undefined> {
    return this.operation('head', key, options, async (s) => {
      try {
        const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: s.signal });
        return { key, size: out.ContentLength ?? 0 };
      } catch (error) {
        if (isStatus(error, 404)) return undefined;
        throw error;
      }
    });
  }

  async *list(prefix: string, options?: CallOptions): AsyncIterable<ObjectInfo> {
    let token: string | undefined;
    do {
      const page = await this.operation('list', prefix, options, (s) =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: s.signal }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  close(): void {
    this.client.destroy();
  }

  /** SHA-256 of what is at the key now (read in full: metadata could lie), or `undefined`. */
  private async digestAt(key: string, s: OperationSignals): Promise<string | undefined> {
    try {
      return sha256Hex(await this.getIn(key, s));
    } catch (error) {
      if (error instanceof ObjectNotFoundError) return undefined;
      throw error;
    }
  }

  private async getIn(key: string, s: OperationSignals): Promise<Buffer> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: s.signal });
      // The handler's request timer stops at the response headers; the body gets the rest of
      // a request's time, and the operation budget still applies.
      return await readBody(out.Body as Readable, AbortSignal.any([s.signal, AbortSignal.timeout(this.bounds.requestTimeoutMs)]));
    } catch (error) {
      if (isStatus(error, 404)) throw new ObjectNotFoundError(key);
      throw error;
    }
  }
}

async function readBody(body: Readable, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of addAbortSignal(signal, body)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
