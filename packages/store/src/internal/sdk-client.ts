import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { ConfiguredRetryStrategy } from '@smithy/util-retry';
import type { StoreBounds } from '../bounds.ts';

export interface SdkClientOptions {
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly forcePathStyle: boolean;
  readonly accessKeyId: string | undefined;
  readonly secretAccessKey: string | undefined;
  readonly bounds: StoreBounds;
  readonly backoff: (retry: number) => number;
}

/**
 * The S3 client with every bound set explicitly. Nothing here may be left to an SDK default:
 * node-http-handler's `requestTimeout` is 0 (none) by default and, from 4.4, only logs unless
 * `throwOnRequestTimeout` is set; the SDK's default retry strategy is 3 attempts.
 */
export function createSdkClient(options: SdkClientOptions): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle,
    ...(options.accessKeyId && options.secretAccessKey
      ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
      : {}),
    requestHandler: new NodeHttpHandler({
      requestTimeout: options.bounds.requestTimeoutMs,
      throwOnRequestTimeout: true,
      connectionTimeout: options.bounds.connectTimeoutMs,
      // A socket silent this long is dead, also while a response body streams.
      socketTimeout: options.bounds.requestTimeoutMs,
    }),
    // n total attempts: the first plus maxRetries.
    retryStrategy: new ConfiguredRetryStrategy(options.bounds.maxRetries + 1, options.backoff),
    // Since 3.729 the SDK adds a CRC32 to every put and streams bodies aws-chunked, which some
    // S3-protocol servers store with the framing. We send Buffers with our own SHA-256.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
