import { UnsupportedBackendError } from './errors.ts';

/** Backends the store writes to. */
export type ObjectStoreBackend = 's3' | 'garage';

/**
 * Where the objects live. `ObjectStoreSettings` from `@craig/settings` has this shape, so a
 * service passes `settings.archive.objectStore` as is.
 */
export interface ObjectStoreConfig {
  /**
   * `s3`: AWS, MinIO, R2, Ceph; they honour `If-None-Match: *`. `garage`: ignores it, so every
   * write is read back and verified. Anything else (a local filesystem) is refused.
   */
  readonly backend: string;
  /** Endpoint URL; unset means AWS for the region. */
  readonly endpoint?: string | undefined;
  readonly region: string;
  readonly bucket: string;
  /** Set with the secret, or neither (then the SDK's default credential chain applies). */
  readonly accessKeyId?: string | undefined;
  readonly secretAccessKey?: string | undefined;
  readonly forcePathStyle?: boolean | undefined;
}

/** Refuse, at boot, any backend that is not `s3` or `garage`. */
export function checkBackend(backend: string): ObjectStoreBackend {
  if (backend === 's3' || backend === 'garage') return backend;
  throw new UnsupportedBackendError(backend);
}
